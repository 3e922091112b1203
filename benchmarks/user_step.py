"""DP-SGD's default step on a user's own PyTorch model: where it serves and where a declared distance serves better.

The default step 2Φ/(L·G) (`13_dpsgd`) treats the declared L as a Lipschitz bound; on a user's model L is only the clip.
Made-up data (2,000 training rows of 10 features in the unit ball, 1,000 held out), three small torch MLPs: a regression
with the squared loss (one output), a binary classifier (one output, logistic loss) and a 10-class one (cross-entropy),
each at ε = 1 and 8, noise seeds 0–2, beside the same run with the distance rule R/(G·√T) at R = ‖x0‖ (`travel=`).
Held-out figures (mean squared error, or accuracy) are not private: this measures defaults, it chooses nothing.

    .venv/bin/python benchmarks/user_step.py    # about 2 minutes on 2 cores; needs torch
"""
import warnings
import numpy as np

def data(n:int, seed:int):
    "Features in the unit ball; a smooth regression target, a binary label and a 10-class label of the same features."
    rng = np.random.default_rng(seed); A = rng.normal(size=(n, 10)) / 3
    A /= np.maximum(1.0, np.linalg.norm(A, axis=1, keepdims=True))
    W = np.random.default_rng(99).normal(size=(10, 10))
    return A, dict(regression=np.tanh(3 * A[:, 0]) * 0.5 + A[:, 1] ** 2, binary=(A[:, 0] + A[:, 1] > 0).astype(float),
                   classes=(A @ W).argmax(1).astype(float))

def task(kind:str):
    "(problem on the training rows, held-out metric of a point: −MSE or accuracy)."
    import torch
    from dpnotebooks import from_torch
    F, nn = torch.nn.functional, torch.nn
    (A, Y), (At, Yt) = data(2000, 0), data(1000, 1)
    out = 10 if kind == "classes" else 1
    torch.manual_seed(0); net = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, out))
    loss = dict(regression=lambda o, t: F.mse_loss(o.reshape(()), t), binary=lambda o, t: F.binary_cross_entropy_with_logits(o.reshape(()), t),
                classes=lambda o, t: F.cross_entropy(o, t.long()))[kind]
    p = from_torch(net, (A, Y[kind]), L=1.0, loss=loss)
    if kind == "regression": return p, lambda x: -float(np.mean((p.predict(x, At) - Yt[kind]) ** 2)), float(np.var(Yt[kind]))
    return p, lambda x: p.score(x, (At, Yt[kind])), None

def main():
    from dpnotebooks.planning.minimize import minimize
    warnings.simplefilter("ignore")
    print("model        eps  rule          step    held-out (mean ± sd over seeds 0-2)")
    for kind in ("regression", "binary", "classes"):
        p, metric, var = task(kind)
        if var is not None: print(f"{kind}: held-out variance of y {var:.4f} (the MSE of predicting its mean); at x0 {-metric(p.x0):.4f}")
        for eps in (1.0, 8.0):
            for rule, kw in (("default", {}), ("R = |x0|", dict(travel=float(np.linalg.norm(p.x0))))):
                vals, eta = [], None
                for seed in range(3):
                    r = minimize(p, "dp-sgd", epsilon=eps, delta=1e-5, seed=seed, progress=False, **kw)
                    vals.append(metric(r.x)); eta = r.trace["plan"].params.eta
                m = np.mean(vals) * (-1 if kind == "regression" else 1)
                print(f"{kind:12s} {eps:3g}  {rule:10s} {eta:7.3f}   {'MSE' if kind == 'regression' else 'acc'} {m:.4f} ± {np.std(vals):.4f}", flush=True)

if __name__ == "__main__": main()
