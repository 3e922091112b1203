"""Held-out accuracy of dp-sgd on breast-cancer against epsilon (issue 21's anchor task): a 70/30 split with public seed 0,
features scaled with public constants (`load_sklearn`), an MLP d-32-1 (ReLU, biases, logistic loss; `from_jax`) or the
linear `logistic` problem, delta = 1e-5, the mean over seeds. Held-out data are not private; nothing here is tuned on them.

    .venv/bin/python benchmarks/utility_breast_cancer.py [mlp|logistic] [SEEDS] ['{"epochs": 5, ...}']

The last argument passes overrides to `minimize` (default: none, i.e. the recipe's defaults). Needs jax (the [dev] extra)
for the MLP.
"""
import json, sys, time, warnings
import numpy as np
from dpnotebooks.problems.base import Logistic
from dpnotebooks.problems.dataset import load_sklearn, Dataset
from dpnotebooks.planning.minimize import minimize

EPSILONS = (0.5, 1, 2, 4, 8)

def task(kind:str):
    "(training problem, held-out accuracy of a point) on the 70/30 split."
    ds = load_sklearn("breast-cancer"); A, y = np.asarray(ds.A), np.asarray(ds.y)
    perm = np.random.default_rng(0).permutation(len(y)); k = int(0.7 * len(y)); tr, te = perm[:k], perm[k:]
    if kind == "logistic":
        return Logistic(Dataset(A[tr], y[tr], "bc-train")), lambda x: float(np.mean(np.sign(A[te] @ np.asarray(x)) == y[te]))
    import jax, jax.numpy as jnp
    from dpnotebooks.problems.losses import from_jax
    jax.config.update("jax_enable_x64", True)
    d, h = A.shape[1], 32
    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    params = dict(W1=jax.random.normal(k1, (d, h)) * jnp.sqrt(2 / d), b1=jnp.zeros(h), w2=jax.random.normal(k2, (h,)) / jnp.sqrt(h), b2=0.0)
    logit = lambda q, a: jnp.maximum(a @ q["W1"] + q["b1"], 0) @ q["w2"] + q["b2"]
    bce = lambda q, a, t: jnp.logaddexp(0.0, logit(q, a)) - t * logit(q, a)
    t01 = (y + 1) / 2
    p = from_jax(bce, params, (A[tr], t01[tr]), L=1.0, predict=logit)
    return p, lambda x: p.score(x, (A[te], t01[te]))

if __name__ == "__main__":
    kind = sys.argv[1] if len(sys.argv) > 1 else "mlp"
    seeds = range(int(sys.argv[2]) if len(sys.argv) > 2 else 3)
    overrides = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
    prob, score = task(kind); t0 = time.time()
    for eps in EPSILONS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            accs = [score(minimize(prob, "dp-sgd", epsilon=eps, delta=1e-5, seed=s, **overrides).x) for s in seeds]
        print(f"{kind} eps={eps:g}: held-out accuracy {np.mean(accs):.3f} ({', '.join(f'{a:.3f}' for a in accs)})", flush=True)
    print(f"{kind} {overrides or 'defaults'}: {time.time() - t0:.0f} s")
