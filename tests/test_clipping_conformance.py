"""One clipping contract, one harness: every implementation of a problem's clipped gradient sum Σ_i clip_C(∇f_i(x)) is
checked against one reference written here, on the same rows. The implementations are the linear models' fused path,
softmax cross-entropy's fused paths (`Multinomial`, `SoftmaxMLP`; one row labelled outside their k classes), the MLP's fused path,
the deep MLP's (`DeepMLP`, two hidden layers, one logistic output or three softmax outputs), JAX ghost clipping (`from_jax`: a
linear model, and one model per layer kind of `04i_jax_ghost`: a CNN, conv1d + GroupNorm, a residual block with LayerNorm, an
embedding, a dense layer over positions), PyTorch ghost clipping (`from_torch`: one model per layer rule of `04j_torch_ghost`,
Linear, Conv2d, Conv1d, GroupNorm, LayerNorm in a residual block, Embedding, a dense layer over positions; skipped without torch) and
the materialized path (`clip_rows` of `grad_each`, what every other problem gets). The rows are ordinary ones, a zero
row, a NaN and an inf entry, rows of norm 1e±200 (1e±30 in float32), and a row whose squared gradient norm overflows. The
sum, the number of rows clipped and the number of rows zeroed must agree.

The contract (rule 1: non-finite or huge per-sample values are zeroed or clipped inside the mechanism): a row with any
non-finite gradient entry is zeroed and counted; a finite row is scaled to norm min(‖g‖, C), its norm taken without
overflow. One freedom: a finite row whose squared norm overflows the dtype may be zeroed instead (and counted as zeroed).
Ghost clipping sees only squared norms, assembled from factors, so JAX's and PyTorch's paths take it; the linear, MLP
and materialized paths clip such a row. Either way the row's contribution has norm at most C."""
import math
import numpy as np
import pytest
from dpnotebooks.core.backend import use_backend, to_numpy, asarray
from dpnotebooks.privacy.clipping import clip_rows
from dpnotebooks.problems.base import Logistic, RobustRegression
from dpnotebooks.problems.dataset import Dataset
from dpnotebooks.algorithms.dpsgd import MLP
from dpnotebooks.problems.multinomial import Multinomial
from dpnotebooks.algorithms.softmax_mlp import SoftmaxMLP
from dpnotebooks.algorithms.deep_mlp import DeepMLP

P, CLIP = 4, 0.7


def rows(dtype) -> tuple:
    "(features, ±1 targets) of 12 ordinary rows and the edge rows, in `dtype`."
    big, small = (1e200, 1e-200) if dtype == np.float64 else (1e30, 1e-30)
    over = math.sqrt(np.finfo(dtype).max) * 4          # a row whose squared norm overflows, its norm finite
    A = np.random.default_rng(0).normal(size=(12, P))
    edge = np.array([[0.0] * P, [np.nan, 1, 1, 1], [1, np.inf, 1, 1], [big, 1, 1, 1], [small, 0, 0, 0], [over, over, 0, 0]])
    A = np.concatenate([A, edge]).astype(dtype)
    return A, np.where(np.arange(len(A)) % 2 == 0, 1.0, -1.0).astype(dtype)


def reference(G, clip: float, overflow: str = "clip", dtype=np.float64, A=None) -> tuple:
    """(Σ clipped rows, rows clipped, rows zeroed) of per-sample gradients G (b, d), in float64, by the contract; a row whose
    squared norm overflows `dtype` is clipped (`overflow="clip"`) or zeroed ("zero"; "zero-inputs" zeroes too a row whose
    features' squared norm overflows, the sample's inputs `A`)."""
    G = np.asarray(G, dtype=np.float64).reshape(len(G), -1)
    bad = ~np.all(np.isfinite(G), axis=1)
    if overflow in ("zero", "zero-inputs"):
        with np.errstate(over="ignore"): bad |= ~np.isfinite(np.sum(np.where(bad[:, None], 0, G).astype(dtype) ** 2, axis=1))
    if overflow == "zero-inputs":      # ghost norms multiply the layers' input norms by their output gradients' (inf · 0 is NaN)
        with np.errstate(over="ignore", invalid="ignore"): bad |= ~np.isfinite(np.sum(np.asarray(A, dtype) ** 2, axis=1))
    G = np.where(bad[:, None], 0.0, G)
    m = np.max(np.abs(G), axis=1)
    norms = np.where(m > 0, m * np.sqrt(np.sum((G / np.where(m > 0, m, 1)[:, None]) ** 2, axis=1)), 0.0)
    over = norms > clip * (1 + 1e-12)
    scale = np.where(over, clip / np.where(over, norms, 1), 1.0)
    return (G * scale[:, None]).sum(0), int(over.sum()), int(bad.sum())


def _linear(cls):
    def make(A, y): return cls(Dataset(A, y))
    return make

def _classes(y):
    "k = 3 classes; row 5 has the label 7, outside the schema (a NaN gradient: zeroed and counted)."
    t = (np.arange(len(y)) % 3).astype(y.dtype); t[5] = 7
    return t

def _multinomial(A, y): return Multinomial(Dataset(A, _classes(y)), k=3)

def _softmax_mlp(A, y): return SoftmaxMLP(Dataset(A, _classes(y)), k=3, hidden=5, seed=1)

def _mlp(A, y): return MLP(Dataset(A, y), hidden=6, L=1.0, seed=1)

def _deep_mlp(A, y): return DeepMLP(Dataset(A, y), hidden=(5, 3), seed=1)

def _deep_softmax(A, y): return DeepMLP(Dataset(A, _classes(y)), hidden=(5, 3), k=3, seed=1)

def _jax(A, y):
    jnp = pytest.importorskip("jax.numpy", reason="JAX is an optional extra (pip install 'dpnotebooks[jax]')")
    from dpnotebooks.problems.losses import from_jax
    return from_jax(lambda w, a, t: jnp.logaddexp(0.0, -t * (a @ w)), jnp.full(P, 0.3), (A, y), L=1.0)

def _torch(make):
    "A PyTorch model `make(nn)` through from_torch, its clipped sum by ghost clipping's layer rules (`04j_torch_ghost`)."
    def build(A, y):
        torch = pytest.importorskip("torch", reason="PyTorch is an optional extra (pip install 'dpnotebooks[torch]')")
        from dpnotebooks.problems.losses import from_torch
        torch.manual_seed(0); net = make(torch.nn)
        with torch.no_grad():
            for q in net.parameters(): q.mul_(3.0)           # larger gradients: some rows clipped at C = 0.7
        p = from_torch(net, (A, y), L=1.0, loss=lambda out, t: torch.nn.functional.softplus(-t * out), dtype=str(np.asarray(A).dtype))   # the sum in the rows' precision
        assert p.clipping_path.startswith("ghost"), p.clipping_path
        return p
    return build

def _residual(nn, w=6):
    class Res(nn.Module):
        def __init__(s): super().__init__(); s.f = nn.Sequential(nn.Linear(w, w), nn.ReLU(), nn.Linear(w, w))
        def forward(s, x): return x + s.f(x)
    return nn.Sequential(nn.Linear(P, w), Res(), nn.LayerNorm(w), nn.Linear(w, 1))

def _tokens(nn):
    class Tok(nn.Module):           # features read as token ids 0..4 (0 the padding row; NaN, inf and huge become 0), and a dense path
        def __init__(s): super().__init__(); s.e, s.o, s.l = nn.Embedding(5, 3, padding_idx=0), nn.Linear(3, 1), nn.Linear(P, 1)
        def forward(s, x): return s.o(s.e((x.abs() * 5).long().clamp(0, 4)).sum(1)) + s.l(x)
    return Tok()

def _sequence(nn):
    class Seq(nn.Module):           # a dense layer over 2 positions of 2 features
        def __init__(s): super().__init__(); s.l, s.o = nn.Linear(2, 3), nn.Linear(3, 1)
        def forward(s, x): return s.o(s.l(x.reshape(x.shape[0], 2, 2)).relu().sum(1))
    return Seq()

def _jax_model(make):
    "A JAX model `make(jnp, lax) -> (params, out(q, a))` through from_jax, softplus(−t·out); its ghost plan checked to be the fast path."
    def build(A, y):
        jax = pytest.importorskip("jax", reason="JAX is an optional extra (pip install 'dpnotebooks[jax]')")
        import jax.numpy as jnp
        from jax.flatten_util import ravel_pytree
        from dpnotebooks.problems.losses import from_jax
        from dpnotebooks.problems.jax_ghost import jax_clipped_sum_fn
        shapes, out = make(jnp, jax.lax)
        rng = np.random.default_rng(1); params = {k: jnp.asarray(rng.normal(size=s) * 0.9) for k, s in shapes.items()}
        loss = lambda q, a, t: jax.nn.softplus(-t * out(q, a))
        flat, unravel = ravel_pytree(params)
        plan = jax_clipped_sum_fn(lambda x, a, t: loss(unravel(x), a, t), flat, P).plan
        assert plan.fast, plan.describe()
        return from_jax(loss, params, (A, y), L=1.0, dtype=str(np.asarray(A).dtype))
    return build

def _jax_cnn(jnp, lax):          # the 4 features as a 2×2 image: conv 1→3 (2×2, padded) with a bias, ReLU, conv 3→2 (2×2), a dense head
    def out(q, a):
        h = jnp.maximum(lax.conv_general_dilated(a.reshape(1, 1, 2, 2), q["K1"], (1, 1), ((1, 1), (1, 1))) + q["c1"][None, :, None, None], 0)
        return lax.conv_general_dilated(h, q["K2"], (1, 1), "VALID").reshape(-1) @ q["w"] + q["b"]
    return {"K1": (3, 1, 2, 2), "c1": (3,), "K2": (2, 3, 2, 2), "w": (8,), "b": ()}, out

def _jax_conv_groupnorm(jnp, lax):   # 2 channels × 2 positions: conv1d 2→4 (width 1), GroupNorm (2 groups) with scale and shift, a dense head
    def out(q, a):
        h = lax.conv_general_dilated(a.reshape(1, 2, 2), q["K"], (1,), "VALID")[0]
        g = h.reshape(2, 4); g = (g - g.mean(-1, keepdims=True)) / jnp.sqrt(g.var(-1, keepdims=True) + 1e-5)
        return (g.reshape(4, 2) * q["s"][:, None] + q["o"][:, None]).reshape(-1) @ q["w"] + q["b"]
    return {"K": (4, 2, 1), "s": (4,), "o": (4,), "w": (8,), "b": ()}, out

def _jax_residual_layernorm(jnp, lax, w=6):   # dense, a residual block, LayerNorm with scale and shift, a dense head
    def out(q, a):
        h = a @ q["W0"] + q["b0"]; h = h + jnp.maximum(h @ q["W1"] + q["b1"], 0) @ q["W2"] + q["b2"]
        h = (h - h.mean()) / jnp.sqrt(h.var() + 1e-5) * q["g"] + q["beta"]
        return h @ q["v"] + q["c"]
    return {"W0": (P, w), "b0": (w,), "W1": (w, w), "b1": (w,), "W2": (w, w), "b2": (w,), "g": (w,), "beta": (w,), "v": (w,), "c": ()}, out

def _jax_tokens(jnp, lax):       # features read as token ids 0..4 looked up in a 5×3 table, summed, and a dense path
    def out(q, a):
        ids = jnp.clip(jnp.nan_to_num(jnp.abs(a) * 5, nan=0.0, posinf=0.0).astype(jnp.int32), 0, 4)
        return jnp.sum(q["E"][ids], axis=0) @ q["o"] + a @ q["l"] + q["b"]
    return {"E": (5, 3), "o": (3,), "l": (P,), "b": ()}, out

def _jax_sequence(jnp, lax):     # a dense layer over 2 positions of 2 features
    def out(q, a): return jnp.sum(jnp.maximum(a.reshape(2, 2) @ q["W"] + q["c"], 0), axis=0) @ q["o"] + q["b"]
    return {"W": (2, 3), "c": (3,), "o": (3,), "b": ()}, out

# name: (model, overflow mode). A dense first layer's ghost norm ‖h‖²‖γ‖² overflows with the input ("zero-inputs", as PyTorch's);
# GroupNorm after the first conv scales a huge row back to size, its gradient finite and clipped ("zero").
JAX = {"jax cnn (ghost)": (_jax_cnn, "zero-inputs"), "jax conv1d + groupnorm (ghost)": (_jax_conv_groupnorm, "zero"),
       "jax residual + layernorm (ghost)": (_jax_residual_layernorm, "zero-inputs"), "jax embedding (ghost)": (_jax_tokens, "zero-inputs"),
       "jax sequence (ghost)": (_jax_sequence, "zero-inputs")}

TORCH = {"torch mlp (ghost)": lambda nn: nn.Sequential(nn.Linear(P, 3), nn.ReLU(), nn.Linear(3, 1)),
         "torch cnn (ghost)": lambda nn: nn.Sequential(nn.Unflatten(1, (1, 2, 2)), nn.Conv2d(1, 3, 2, padding=1), nn.ReLU(), nn.Conv2d(3, 2, 2, bias=False), nn.Flatten(), nn.Linear(8, 1)),
         "torch conv1d + groupnorm (ghost)": lambda nn: nn.Sequential(nn.Unflatten(1, (2, 2)), nn.Conv1d(2, 4, 1), nn.GroupNorm(2, 4), nn.Flatten(), nn.Linear(8, 1)),
         "torch residual + layernorm (ghost)": _residual, "torch embedding (ghost)": _tokens, "torch sequence (ghost)": _sequence}

# name: (constructor, what its fused path does with a row whose squared norm overflows)
PROBLEMS = {"logistic (linear, fused)": (_linear(Logistic), "clip"), "robust regression (linear, fused)": (_linear(RobustRegression), "clip"),
            "multinomial (fused)": (_multinomial, "clip"), "softmax mlp (fused)": (_softmax_mlp, "clip"), "mlp (fused)": (_mlp, "clip"),
            "deep mlp (fused)": (_deep_mlp, "clip"), "deep softmax mlp (fused)": (_deep_softmax, "clip"), "jax (ghost)": (_jax, "zero"),
            **{name: (_torch(make), "zero-inputs") for name, make in TORCH.items()}, **{name: (_jax_model(make), mode) for name, (make, mode) in JAX.items()}}


def per_sample(problem, x, batch):
    "The problem's per-sample gradients at x, (b, d), as numpy float64 (NaN/inf kept: the reference zeroes them)."
    with np.errstate(all="ignore"):
        X = asarray(np.broadcast_to(x, (len(batch), 1, len(x))))                   # one point per sample, as grad_each takes them
        return np.asarray(to_numpy(problem.grad_each(X, batch)), dtype=np.float64).reshape(len(batch), -1)


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("name", list(PROBLEMS))
def test_every_clipped_sum_meets_the_contract(name, dtype):
    A, y = rows(dtype)
    with use_backend("numpy", "float32" if dtype == np.float32 else "float64"):
        make, overflow = PROBLEMS[name]
        problem = make(A, y)
        x = np.asarray(to_numpy(problem.x0), dtype=np.float64) + 0.05
        batch, G = problem.data, per_sample(problem, x, problem.data)
        paths = {"materialized": clip_rows(asarray(G), CLIP)}
        if getattr(problem, "clipped_sum", None) is not None: paths["fused"] = problem.clipped_sum(asarray(x), batch, CLIP)
        for path, got in paths.items():
            want, clipped, zeroed = reference(G, CLIP, "clip" if path == "materialized" else overflow, dtype, A)
            S = got.values.sum(0) if path == "materialized" else got[0]
            c = got if path == "materialized" else got[1]
            tol = 1e-10 if dtype == np.float64 else 2e-4
            np.testing.assert_allclose(np.asarray(to_numpy(S), dtype=np.float64), want, rtol=tol, atol=tol * CLIP, err_msg=f"{name}, {path}")
            assert (c.clipped, c.nonfinite) == (clipped, zeroed), f"{name}, {path}: clipped {c.clipped} (want {clipped}), zeroed {c.nonfinite} (want {zeroed})"
        assert zeroed >= 1 and clipped >= 2, "the rows must exercise zeroing and clipping"


def test_the_harness_catches_a_wrong_clip():
    "It can fail: a fused path that clips to 2C, or keeps a NaN row's other entries, disagrees with the reference."
    A, y = rows(np.float64)
    problem = Logistic(Dataset(A, y)); x = np.full(P, 0.05)
    want, _, _ = reference(per_sample(problem, x, problem.data), CLIP)
    S2, _ = problem.clipped_sum(asarray(x), problem.data, 2 * CLIP)
    assert not np.allclose(np.asarray(to_numpy(S2)), want, rtol=1e-10)
    G = np.array([[np.nan, 5.0, 0, 0], [0.1, 0, 0, 0], [1e200, 1e200, 0, 0]])
    assert np.allclose(reference(G, CLIP)[0], [0.1 + CLIP / math.sqrt(2), CLIP / math.sqrt(2), 0, 0])   # the NaN row zeroed, the huge one clipped
    kept = np.where(np.isnan(G), 0.0, G)                                            # a path that zeroes the NaN entry only, not its row
    assert not np.allclose(reference(kept, CLIP)[0], reference(G, CLIP)[0], rtol=1e-10)
    assert reference(G, CLIP, "zero")[1:] == (0, 2) and reference(G, CLIP, "clip")[1:] == (1, 1)   # the overflowing row: zeroed, or clipped


@pytest.mark.parametrize("name", ["mlp (fused)", "torch cnn (ghost)"])
def test_every_first_order_algorithm_takes_the_fused_sum(name):
    """DP-SGD at α = 0, SpiderBoost's checkpoint gradient and the convex/GLM gradient steps all release `fo_sum_clipped`, which takes the
    problem's fused sum: with per-sample gradients forbidden they still run, and give the materialized reference."""
    from dpnotebooks.algorithms.dpsgd import clipped_grad_sum
    from dpnotebooks.algorithms.spiderboost import clipped_mean_gradient
    from dpnotebooks.algorithms.convex_glm import clipped_mean_grad
    from dpnotebooks.core.backend import make_rng
    A, y = rows(np.float64)
    problem = PROBLEMS[name][0](A, y)
    x = np.asarray(to_numpy(problem.x0), dtype=np.float64) + 0.05
    want, clipped, _ = reference(per_sample(problem, x, problem.data), CLIP, PROBLEMS[name][1], np.float64, A)
    def forbidden(*a, **k): raise AssertionError("a per-sample gradient was materialized")
    problem.grad_each = forbidden
    n = len(problem.data)
    for got, scale in [(clipped_grad_sum(problem, x, problem.data, CLIP, 0.0, make_rng(0)), 1.0),
                       (clipped_mean_gradient(problem, x, problem.data, CLIP), n), (clipped_mean_grad(problem, x, problem.data, CLIP), n)]:
        np.testing.assert_allclose(scale * np.asarray(to_numpy(got[0])), want, rtol=1e-10, atol=1e-10 * CLIP)
        assert got[1].clipped == clipped and got[1].total == n


def test_a_model_without_ghost_rules_sums_in_bounded_blocks(monkeypatch):
    """A PyTorch model with a layer that has no rule (BatchNorm) keeps the per-example path; its clipped sum is formed in blocks of at
    most `default_chunk()` floats, and the blocks give the reference's sum and counts."""
    torch = pytest.importorskip("torch", reason="PyTorch is an optional extra (pip install 'dpnotebooks[torch]')")
    import warnings
    from dpnotebooks.problems import losses
    A, y = rows(np.float64)
    torch.manual_seed(0); net = torch.nn.Sequential(torch.nn.Linear(P, 3), torch.nn.BatchNorm1d(3), torch.nn.Linear(3, 1)).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore"); problem = losses.from_torch(net, (A, y), L=1.0, loss=lambda o, t: torch.nn.functional.softplus(-t * o))
    assert not problem.clipping_path.startswith("ghost"), problem.clipping_path
    x = np.asarray(to_numpy(problem.x0), dtype=np.float64) + 0.05
    want, clipped, zeroed = reference(per_sample(problem, x, problem.data), CLIP)
    seen = []
    grad_each = problem.grad_each
    monkeypatch.setattr(problem, "grad_each", lambda X, b: (seen.append(len(b)), grad_each(X, b))[1])
    monkeypatch.setattr(losses, "default_chunk", lambda: 3 * problem.dim)             # blocks of 3 rows
    S, c = problem.clipped_sum(asarray(x), problem.data, CLIP)
    np.testing.assert_allclose(np.asarray(to_numpy(S)), want, rtol=1e-10, atol=1e-10 * CLIP)
    assert (c.clipped, c.nonfinite, c.total) == (clipped, zeroed, len(problem.data)) and max(seen) == 3 and sum(seen) == len(problem.data)
