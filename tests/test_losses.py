"""Bring your own model (nbs/problems/04e_losses): per-example losses written in JAX (run in CI: jax is in the
dev extra) or PyTorch (where it is installed) become problems every algorithm accepts; their per-sample gradients match
finite differences and hand-written references in float64; clipping, not the declared L, bounds the sensitivity."""
import numpy as np
import pytest
from dpnotebooks.problems.losses import from_jax, from_torch
from dpnotebooks.planning.minimize import minimize, planned_ledger, plan_run

jax = pytest.importorskip("jax", reason="JAX is not installed: pip install 'dpnotebooks[jax]' (it is in the dev extra)")
import jax.numpy as jnp
try: import torch
except ImportError: torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed here (optional extra: pip install 'dpnotebooks[torch]')")

P, H = 4, 6

def data(n=400, seed=0):
    r = np.random.default_rng(seed); A = r.normal(size=(n, P)) / np.sqrt(P)
    return A, (A @ np.array([1.0, -2.0, 0.5, 1.0]) > 0).astype(float)

def mlp_weights(seed=0):
    r = np.random.default_rng(seed)
    return dict(W1=r.normal(size=(P, H)) / 2, b1=r.normal(size=H) / 4, w2=r.normal(size=H) / 2, b2=np.array(0.1))

def jax_mlp(d=None):
    logit = lambda q, a: jnp.maximum(a @ q["W1"] + q["b1"], 0) @ q["w2"] + q["b2"]
    bce = lambda q, a, y: jnp.logaddexp(0.0, logit(q, a)) - y * logit(q, a)
    return from_jax(bce, {k: jnp.asarray(v) for k, v in mlp_weights().items()}, d or data(), L=1.0, predict=logit)

def torch_mlp(d=None):
    w = mlp_weights(); net = torch.nn.Sequential(torch.nn.Linear(P, H), torch.nn.ReLU(), torch.nn.Linear(H, 1)).double()
    with torch.no_grad():
        net[0].weight.copy_(torch.as_tensor(w["W1"].T)); net[0].bias.copy_(torch.as_tensor(w["b1"]))
        net[2].weight.copy_(torch.as_tensor(w["w2"][None])); net[2].bias.copy_(torch.as_tensor(w["b2"][None]))
    return from_torch(net, d or data(), L=1.0, loss=torch.nn.functional.binary_cross_entropy_with_logits)

def fd_error(prob, k=3, b=5, h=1e-6):
    r = np.random.default_rng(1); X, batch = prob.x0[None] + 0.3 * r.normal(size=(k, prob.dim)), prob.data[:b]
    G = np.asarray(prob.grad(X, batch))
    fd = np.stack([(prob.value(X + h * e, batch) - prob.value(X - h * e, batch)) / (2 * h) for e in np.eye(prob.dim)], axis=-1)
    Xe = np.broadcast_to(X, (b, k, prob.dim)).copy()
    assert np.allclose(prob.value_each(Xe, batch), np.asarray(prob.value(X, batch)).T, rtol=0, atol=1e-13)
    assert np.allclose(prob.grad_each(Xe, batch), G.transpose(1, 0, 2), rtol=0, atol=1e-13)
    return float(np.abs(fd - G).max())

def test_jax_per_sample_gradients_match_finite_differences():
    assert fd_error(jax_mlp()) < 1e-8

@needs_torch
def test_torch_per_sample_gradients_match_finite_differences():
    assert fd_error(torch_mlp()) < 1e-8

def test_jax_logistic_regression_matches_the_hand_written_gradient():
    A, y = data(); lr = from_jax(lambda w, a, t: jnp.logaddexp(0.0, a @ w) - t * (a @ w), jnp.zeros(P), (A, y), L=1.0)
    W = np.random.default_rng(2).normal(size=(3, P)); Z = W @ A[:7].T
    assert np.allclose(lr.grad(W, lr.data[:7]), (1 / (1 + np.exp(-Z)) - y[:7])[..., None] * A[:7][None], rtol=0, atol=1e-12)

@needs_torch
def test_the_same_network_in_torch_and_jax_gives_the_same_numbers():
    pj, pt = jax_mlp(), torch_mlp()
    order = {"W1": "0.weight", "b1": "0.bias", "w2": "2.weight", "b2": "2.bias"}        # the two flattenings differ in order
    Xt = np.random.default_rng(3).normal(size=(2, pt.dim)) / 2
    Xj = np.stack([np.concatenate([np.asarray(pt.params_at(x)[order[k]]).T.reshape(-1) for k in sorted(order)]) for x in Xt])
    assert np.allclose(pj.value(Xj, pj.data[:9]), pt.value(Xt, pt.data[:9]), rtol=0, atol=1e-12)
    assert np.allclose(pj.predict(Xj[0], pj.data.A), pt.predict(Xt[0], pt.data.A), rtol=0, atol=1e-12)

@pytest.mark.parametrize("algorithm, kw", [("dp-sgd", dict(alpha=0.01)),               # the others in the slow tier
                                           pytest.param("klt-first-order", dict(alpha=0.05, m=8), marks=pytest.mark.slow),
                                           pytest.param("ztc", dict(alpha=0.05), marks=pytest.mark.slow),
                                           pytest.param("klt-single-pass", dict(alpha=0.05, m=8), marks=pytest.mark.slow)])
def test_algorithms_run_a_jax_loss_within_budget_and_reproducibly(algorithm, kw):
    prob = jax_mlp(data(3000))
    a, b = (minimize(prob, algorithm, epsilon=2.0, delta=1e-5, seed=4, **kw) for _ in range(2))
    assert a.epsilon_spent <= 2.0 and np.all(np.isfinite(a.x)) and np.array_equal(a.x, b.x)
    assert a.ledger == planned_ledger(prob, plan_run(prob, algorithm, 2.0, 1e-5, **kw))

def test_zeroth_order_algorithms_use_only_values():
    prob, calls = jax_mlp(data(3000)), []
    def recorded(f):
        def g(X, batch): calls.append(bool(np.all(np.asarray(batch.A) == 0))); return f(X, batch)
        return g
    prob.grad, prob.grad_each = recorded(prob.grad), recorded(prob.grad_each)
    assert np.all(np.isfinite(minimize(prob, "ztc", epsilon=2.0, delta=1e-5, alpha=0.05, seed=0).x))
    assert all(calls)                            # only `check_loss`'s shape probe, on a zero batch: no gradient of the data

def test_a_smooth_jax_loss_runs_the_smooth_algorithms():
    A, y = data(2000); A = A / np.maximum(1.0, np.linalg.norm(A, axis=1, keepdims=True))        # ||a|| <= 1: 0.25-smooth
    lr = from_jax(lambda w, a, t: jnp.logaddexp(0.0, a @ w) - t * (a @ w), jnp.zeros(P), (A, y), L=1.0, smoothness=0.25,
                  predict=lambda w, a: a @ w)
    r = minimize(lr, "abggmu-spider", epsilon=2.0, delta=1e-5, seed=0, L1=0.25)
    assert r.epsilon_spent <= 2.0 and lr.score(r.x, data(2000, seed=9)) > 0.6

def test_a_wrong_L_costs_accuracy_not_privacy():
    "Gradients 1000 times larger than the declared L: clipping bounds every contribution, the run spends exactly its plan."
    A, y = data(3000); steep = from_jax(lambda w, a, t: 1000.0 * jnp.abs(a @ w - t), jnp.zeros(P), (A, y), L=1.0)
    with pytest.warns(UserWarning, match="Clipping fired"):         # asked-for non-private diagnostics say so
        r = minimize(steep, "dp-sgd", epsilon=1.0, delta=1e-5, alpha=0.01, seed=0, diagnostics="nonprivate")
    assert r.ledger == planned_ledger(steep, plan_run(steep, "dp-sgd", 1.0, 1e-5, 0.01)) and r.nonprivate["clipped_fraction"] > 0.9

def test_bad_input_is_named():
    A, y = data(50)
    with pytest.raises(ValueError, match="one scalar per example"): from_jax(lambda q, a, t: a * q, jnp.zeros(P), (A, y), L=1.0)
    with pytest.raises(ValueError, match="`L` must be"): from_jax(lambda q, a, t: a @ q, jnp.zeros(P), (A, y), L=-1.0)
    with pytest.raises(TypeError, match="must be a Dataset or a pair"): from_jax(lambda q, a, t: a @ q, jnp.zeros(P), A, L=1.0)
    with pytest.raises(ValueError, match="without a predictor"): from_jax(lambda q, a, t: a @ q, jnp.zeros(P), (A, y), L=1.0).score(np.zeros(P))

@needs_torch
def test_torch_bad_input_is_named_and_the_module_comes_back():
    A, y = data(50); net = torch.nn.Linear(P, 1)
    with pytest.raises(ValueError, match="needs `loss"): from_torch(net, (A, y), L=1.0)
    with pytest.raises(ValueError, match="needs `params`"): from_torch(lambda q, a, t: (a * q["w"]).sum(), (A, y), L=1.0)
    pt = from_torch(net, (A, y), L=1.0, loss=torch.nn.functional.binary_cross_entropy_with_logits)
    x = np.arange(pt.dim, dtype=float); m = pt.module_at(x)
    assert np.array_equal(torch.nn.utils.parameters_to_vector(m.parameters()).detach().numpy(), x)
    assert net.weight.dtype == torch.float32                                                     # the user's module is untouched

def test_building_a_loss_reads_no_data_and_an_overspending_run_is_refused_before_reading():
    from dpnotebooks.problems.dataset import Dataset
    from dpnotebooks.privacy.ledger import BudgetExceededError
    class Untouchable(Dataset):
        def __getitem__(self, idx): raise AssertionError("the data were read")
    A, y = data(2000)
    prob = from_jax(lambda w, a, t: jnp.logaddexp(0.0, a @ w) - t * (a @ w), jnp.zeros(P), Untouchable(A, y), L=1.0)
    with pytest.raises(BudgetExceededError, match="Nothing was run"):
        minimize(prob, "dp-sgd", epsilon=1.0, delta=1e-5, alpha=0.01, seed=0, sigma=1e-3)

needs_cuda = pytest.mark.skipif(torch is None or not torch.cuda.is_available(), reason="no CUDA GPU that PyTorch can use here")

@needs_torch
def test_torch_device_is_checked_before_anything_runs():
    net = torch.nn.Linear(P, 1); bce = torch.nn.functional.binary_cross_entropy_with_logits
    with pytest.raises(ValueError, match="Pass 'cpu' or 'cuda'"): from_torch(net, data(50), L=1.0, loss=bce, device="tpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="device='cpu'"): from_torch(net, data(50), L=1.0, loss=bce, device="cuda")

@needs_cuda
def test_torch_on_cuda_gives_the_cpu_numbers_and_the_same_dp_sgd_run():
    "from_torch(device='cuda'): per-sample values, gradients, the ghost clipped sum and a seeded DP-SGD run agree with the CPU's."
    d = data(600); cpu = torch_mlp(d)
    net = torch.nn.Sequential(torch.nn.Linear(P, H), torch.nn.ReLU(), torch.nn.Linear(H, 1))
    gpu = from_torch(net, d, L=1.0, loss=torch.nn.functional.binary_cross_entropy_with_logits, device="cuda")
    gpu.x0 = cpu.x0.copy()
    X = cpu.x0 + 0.1 * np.random.default_rng(5).normal(size=(40, 1, cpu.dim))
    b = cpu.data[:40]
    assert np.allclose(gpu.value_each(X, b), cpu.value_each(X, b), rtol=0, atol=1e-10)
    assert np.allclose(gpu.grad_each(X, b), cpu.grad_each(X, b), rtol=0, atol=1e-10)
    bad = _with_nonfinite_rows(b)
    for clip in (0.05, 10.0):
        (S, k), (R, r) = gpu.clipped_sum(X[0, 0], bad, clip), cpu.clipped_sum(X[0, 0], bad, clip)
        assert np.allclose(S, R, rtol=0, atol=1e-10) and (k.clipped, k.nonfinite) == (r.clipped, r.nonfinite) == (k.clipped, 2)
    a, c = (minimize(p, "dp-sgd", epsilon=1.0, delta=1e-5, alpha=0.0, seed=3) for p in (gpu, cpu))
    assert a.ledger == c.ledger and np.allclose(a.x, c.x, rtol=0, atol=1e-8)

def _with_nonfinite_rows(batch):
    "The batch with a NaN in row 3 and an inf in row 7: each must be zeroed and counted, never reach the sum."
    from dpnotebooks.problems.dataset import Dataset
    A = np.array(batch.A, dtype=float); A[3, 1], A[7, 0] = np.nan, np.inf
    return Dataset(A, np.asarray(batch.y))


def test_a_nonfinite_record_stays_in_its_row_for_a_jax_convolution():
    "XLA computes a vmapped conv kernel gradient with the samples folded into groups, where one NaN reaches every row; a "
    "zeroed record must leave the others' per-sample gradients (and so the clipped sums) as they are."
    rng = np.random.default_rng(0); A = rng.normal(size=(6, 7)); y = rng.choice([-1.0, 1.0], 6)
    def loss(q, a, t):
        h = jax.nn.relu(jax.lax.conv_general_dilated(a.reshape(1, 1, 7), q["K"], (1,), "SAME"))
        return jnp.logaddexp(0.0, -t * (h.reshape(-1) @ q["w"]))
    params = {"K": jnp.asarray(rng.normal(size=(3, 1, 3))), "w": jnp.asarray(rng.normal(size=21))}
    clean, bad = from_jax(loss, params, (A, y), L=1.0), A.copy()
    bad[2, 1] = np.nan; p = from_jax(loss, params, (bad, y), L=1.0)
    X = np.broadcast_to(p.x0, (6, 1, p.dim))
    for G, G0 in ((p.grad_each(X, p.data)[:, 0], clean.grad_each(X, clean.data)[:, 0]), (p.grad(X[:1, 0], p.data)[0], clean.grad(X[:1, 0], clean.data)[0])):
        assert np.isnan(G[2]).all(); np.testing.assert_allclose(np.delete(G, 2, 0), np.delete(G0, 2, 0), rtol=1e-12, atol=1e-15)   # recomputed one by one: the last bits may differ

@needs_torch
@pytest.mark.parametrize("odd", [np.nan, 10.0, -1.0])
@pytest.mark.parametrize("ghost", [True, False])
def test_a_torch_record_the_model_cannot_read_is_zeroed_not_raised(odd, ghost):
    "A 3-class CrossEntropy model: one label NaN, out of range (10) or negative would make torch raise in the batch; the record is "
    "zeroed instead (as a NaN record), so the run and its neighbour end alike, with the same ledger and no message (rule 1)."
    r = np.random.default_rng(0); A = r.normal(size=(300, P)); y = (A[:, 0] > 0).astype(float) + (A[:, 1] > 0)
    act = torch.nn.ReLU() if ghost else torch.nn.PReLU()                # PReLU has no ghost rule: the per-sample path
    xent = lambda o, t: torch.nn.functional.cross_entropy(o[None], t.long()[None])
    runs = []
    for labels in (y, np.where(np.arange(300) == 7, odd, y)):
        torch.manual_seed(0); net = torch.nn.Sequential(torch.nn.Linear(P, H), act, torch.nn.Linear(H, 3))
        import warnings
        with warnings.catch_warnings(): warnings.simplefilter("ignore"); prob = from_torch(net, (A, labels), L=1.0, loss=xent)
        assert ("clipped_sum" in prob._fns) == ghost
        runs.append(minimize(prob, "dp-sgd", epsilon=4.0, delta=1e-5, seed=0, epochs=2))
    assert np.all(np.isfinite(runs[1].x)) and runs[0].ledger.to_dicts() == runs[1].ledger.to_dicts()
    assert 0 < np.abs(runs[0].x - runs[1].x).max() < 1.0

@needs_torch
@pytest.mark.parametrize("ghost", [True, False])
def test_a_batch_of_unreadable_records_only_is_zeroed_and_the_run_goes_on(ghost):
    "Batches of one (shuffled): the batch holding the record labelled 10 has no readable record; it is zeroed whole (its shape from a "
    "public zero record), so the run ends as its neighbour's does, instead of stopping at the step that names the record's position."
    r = np.random.default_rng(1); A = r.normal(size=(40, P)); y = (A[:, 0] > 0).astype(float) + (A[:, 1] > 0)
    act = torch.nn.ReLU() if ghost else torch.nn.PReLU()
    xent = lambda o, t: torch.nn.functional.cross_entropy(o[None], t.long()[None])
    runs = []
    for labels in (y, np.where(np.arange(40) == 7, 10.0, y)):
        torch.manual_seed(0); net = torch.nn.Sequential(torch.nn.Linear(P, H), act, torch.nn.Linear(H, 3))
        import warnings
        with warnings.catch_warnings(): warnings.simplefilter("ignore"); prob = from_torch(net, (A, labels), L=1.0, loss=xent)
        runs.append(minimize(prob, "dp-sgd", epsilon=4.0, delta=1e-5, seed=0, epochs=1, batch_size=1, sampling="shuffle"))
    assert np.all(np.isfinite(runs[1].x)) and runs[0].ledger.to_dicts() == runs[1].ledger.to_dicts()

def test_a_checkpoint_of_another_loss_or_model_is_refused_on_resume(tmp_path):
    "The fingerprint holds the loss's signature (values on seeded probe records at and near x0): another loss at the same x0 is refused."
    from dpnotebooks.engine.checkpoint import CheckpointError, problem_description
    logit = lambda q, a: jnp.maximum(a @ q["W1"] + q["b1"], 0) @ q["w2"] + q["b2"]
    params = {k: jnp.asarray(v) for k, v in mlp_weights().items()}
    bce = lambda q, a, y: jnp.logaddexp(0.0, logit(q, a)) - y * logit(q, a)
    mse = lambda q, a, y: (logit(q, a) - y) ** 2
    a, a2, b = (from_jax(f, params, data(), L=1.0) for f in (bce, bce, mse))
    assert a.signature == a2.signature != b.signature and a.signature in problem_description(a)
    ck = tmp_path / "run.ckpt"
    minimize(a, "dp-sgd", epsilon=1.0, delta=1e-5, seed=0, epochs=2, checkpoint=ck)
    with pytest.raises(CheckpointError, match="the problem"): minimize(b, "dp-sgd", epsilon=1.0, delta=1e-5, seed=0, epochs=2, checkpoint=ck, resume=True)

@needs_torch
def test_a_loss_that_fails_on_the_public_probe_says_why_and_how_to_fix_it():
    "CrossEntropy given float targets fails on from_torch's probe (zeros, never the data): the message keeps torch's and names y.long()."
    net = torch.nn.Sequential(torch.nn.Linear(P, 3))
    with pytest.raises(ValueError, match=r"public probe record.*y\.long\(\)"):
        from_torch(net, data(), L=1.0, loss=lambda o, t: torch.nn.functional.cross_entropy(o[None], t[None].to(torch.int32) + 0.5))

def test_accuracy_is_reported_only_on_class_labels():
    "A user's model with one output predicts a sign: `dpnb run`'s evaluation gives its accuracy on class labels, none on a regression's real targets."
    from dpnotebooks.planning.request import evaluate
    A, y01 = data(); y = A @ np.array([1.0, -2.0, 0.5, 1.0]) + 0.1
    for t, has in ((y01, True), (y, False)):
        p = from_jax(lambda q, a, t_: (a @ q["w"] - t_) ** 2, {"w": jnp.zeros(P)}, (A, t), L=1.0, predict=lambda q, a: a @ q["w"])
        assert ("accuracy" in evaluate(p, p.x0, 0.1)) == has

@needs_torch
def test_a_frozen_layer_stays_as_it_is_and_only_the_rest_is_trained():
    "Fine-tuning a head on a frozen layer (requires_grad=False): the flat point holds the trainable parameters only, their "
    "per-sample gradients alone are clipped, and the frozen weights come back unchanged; the private model learns (ε = 8)."
    import warnings
    A, y = data(1000)
    torch.manual_seed(0); net = torch.nn.Sequential(torch.nn.Linear(P, H), torch.nn.ReLU(), torch.nn.Linear(H, 1)); net[0].requires_grad_(False)
    with warnings.catch_warnings(): warnings.simplefilter("ignore"); prob = from_torch(net, (A[:800], y[:800]), L=1.0, loss=torch.nn.functional.binary_cross_entropy_with_logits)
    assert prob.dim == H + 1 and "frozen" in prob.clipping_path
    res = minimize(prob, "dp-sgd", epsilon=8.0, delta=1e-5, seed=0)
    m = prob.module_at(res.x)
    assert torch.equal(m[0].weight, net[0].weight.double()) and not torch.equal(m[2].weight, net[2].weight.double())
    assert prob.score(res.x, (A[800:], y[800:])) > prob.score(prob.x0, (A[800:], y[800:])) + 0.1

@needs_torch
def test_an_embedding_model_reads_token_ids_and_an_unknown_token_is_zeroed():
    "A model of token ids (Embedding, no clamp): from_torch's public probes suit it, and a token outside the vocabulary in one record is zeroed, not raised."
    import warnings
    class Tok(torch.nn.Module):
        def __init__(s): super().__init__(); s.e, s.o = torch.nn.Embedding(10, 4), torch.nn.Linear(4, 1)
        def forward(s, x): return s.o(s.e(x.long()).mean(1))
    A = np.random.default_rng(0).integers(0, 10, size=(200, 6)).astype(float); y = (A[:, 0] > 4).astype(float)
    runs = []
    for feats in (A, np.where((np.arange(200) == 7)[:, None], 25.0, A)):
        torch.manual_seed(0)
        with warnings.catch_warnings(): warnings.simplefilter("ignore"); prob = from_torch(Tok(), (feats, y), L=1.0, loss=torch.nn.functional.binary_cross_entropy_with_logits)
        runs.append(minimize(prob, "dp-sgd", epsilon=4.0, delta=1e-5, seed=0, epochs=2))
    assert np.all(np.isfinite(runs[1].x)) and runs[0].ledger.to_dicts() == runs[1].ledger.to_dicts()
