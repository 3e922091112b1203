"""Ghost clipping for JAX losses (`dpnotebooks.problems.jax_ghost`, nbs/problems/04i_jax_ghost.ipynb) agrees with per-sample
vmap(grad) + clip: every layer kind the analysis accepts, every fallback it takes, non-finite rows, float32, the
bucketed batch sizes. The notebook checks the ReLU network, logistic regression and one fallback; these are the rest.

    .venv/bin/python -m pytest -q tests/test_jax_ghost.py            # fast ones (~seconds)
    .venv/bin/python -m pytest -q -m slow tests/test_jax_ghost.py    # the full agreement matrix (about a minute)
"""
import subprocess, sys
import numpy as np
import pytest

jax = pytest.importorskip("jax", reason="JAX is an optional extra (pip install 'dpnotebooks[jax]'): ghost clipping for JAX losses is not available")
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree
from dpnotebooks.problems.jax_ghost import jax_clipped_sum_fn, vmap_clipped_sum_fn

jax.config.update("jax_enable_x64", True)
D, K = 7, 5                                                             # small shapes: the tests are about exactness


def reference(f, x, A, y, clip):
    "Σ_i min(1, C/‖g_i‖) g_i from per-sample gradients taken one example at a time (lax.map: a vmapped conv gradient mixes the batch), non-finite rows zeroed; and the two counts."
    G = np.asarray(jax.jit(lambda x, A, y: jax.lax.map(lambda ay: jax.grad(f)(x, *ay), (A, y)))(x, A, y), dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"): n2 = np.sum(G * G, axis=1)
    ok = np.isfinite(n2)
    norm = np.sqrt(np.where(ok, n2, 0.0))
    c = np.minimum(1.0, clip / np.maximum(norm, 1e-300))
    return (c[ok, None] * G[ok]).sum(0), int(np.sum(ok & (norm > clip * (1 + 1e-12)))), int(np.sum(~ok))


def pytree_loss(params, loss):
    "(f(x, a, y) on the flat float64 vector, x0) from a pytree loss, as dpnotebooks.problems.losses.from_jax flattens it."
    flat, unravel = ravel_pytree(jax.tree_util.tree_map(lambda v: jnp.asarray(v, jnp.float64), params))
    return (lambda x, a, y: loss(unravel(x), a, y)), flat


def init(shapes, seed=0):
    rng = np.random.default_rng(seed)
    return {k: rng.standard_normal(s) * 0.5 for k, s in shapes.items()}


def logistic(z, t): return jnp.logaddexp(0., -t * z)


def mlp_relu():
    def loss(q, a, t): return logistic(jax.nn.relu(a @ q["W1"] + q["b1"]) @ q["w2"] + q["b2"], t)
    return pytree_loss(init({"W1": (D, K), "b1": (K,), "w2": (K,), "b2": ()}), loss)


def mlp_tanh2():
    def loss(q, a, t):
        h = jnp.tanh(a @ q["W1"] + q["b1"]); h = jnp.tanh(h @ q["W2"] + q["b2"])
        return logistic(h @ q["w3"] + q["b3"], t)
    return pytree_loss(init({"W1": (D, K), "b1": (K,), "W2": (K, 4), "b2": (4,), "w3": (4,), "b3": ()}), loss)


def logreg():
    return (lambda x, a, y: logistic(a @ x[:D] + x[D], y)), jnp.asarray(np.random.default_rng(1).standard_normal(D + 1))


def logreg_nobias():
    return (lambda x, a, y: logistic(jnp.dot(x, a), y)), jnp.asarray(np.random.default_rng(2).standard_normal(D))


def variants():
    "Transposed weight (W a), a subtracted bias, a per-unit scale (h ⊙ s), a scalar bias broadcast over units, gelu."
    def loss(q, a, t):
        h = jax.nn.gelu(q["V"] @ a - q["c"]) * q["s"] + q["beta"]
        return logistic(jnp.sum(h * q["u"]) + 0.1, t)
    return pytree_loss(init({"V": (K, D), "c": (K,), "s": (K,), "beta": (), "u": (K,)}), loss)


def softmax_int_labels():
    "Three classes, integer labels: the target indexes the logits (a gather on the example side)."
    def loss(q, a, t): z = a @ q["W"] + q["b"]; return jax.nn.logsumexp(z) - z[t]
    return pytree_loss(init({"W": (D, 3), "b": (3,)}), loss)


def nested_jit_layers():
    "Layers written as jitted functions (inlined by the analysis), a constant-scaled input, a mean-squared loss."
    dense = jax.jit(lambda W, b, h: h @ W + b)
    def loss(q, a, t): return (dense(q["w2"], q["b2"], jax.nn.softplus(dense(q["W1"], q["b1"], a / 3.0))) - t) ** 2
    return pytree_loss(init({"W1": (D, K), "b1": (K,), "w2": (K,), "b2": ()}), loss)


def conv1d():
    "A 1-D convolution over the features: the kernel's per-sample gradient through conv_general_dilated's VJP (a layer use)."
    def loss(q, a, t):
        z = jax.lax.conv_general_dilated(a[None, None, :], q["k"][None, None, :], (1,), "VALID")
        return logistic(jnp.sum(z) + q["b"], t)
    return pytree_loss(init({"k": (3,), "b": ()}), loss)


def padded_weights():
    "A weight vector padded with a constant (concatenate of a parameter and a constant): falls back, still exact."
    def loss(q, a, t): return logistic(a @ jnp.concatenate([q["w"], jnp.ones(2)]), t)
    return pytree_loss(init({"w": (D - 2,)}), loss)


def param_in_nonlinearity():
    "A temperature exp(s) multiplies the logit: s enters `exp`, so the ghost path must fall back."
    def loss(q, a, t): return logistic(jnp.exp(q["s"]) * (a @ q["w"]), t)
    return pytree_loss(init({"w": (D,), "s": ()}), loss)


def tied_weights():
    "The same matrix used twice (W then Wᵀ): an entry of x used twice."
    def loss(q, a, t): return jnp.sum((jnp.tanh(a @ q["W"]) @ q["W"].T - a) ** 2) + 0 * t
    return pytree_loss(init({"W": (D, 3)}), loss)


def sequence():
    "A per-example 2-D activation (a sequence of 7 one-dim steps through a 1×K dense layer): a layer use (dot_general with free dims)."
    def loss(q, a, t): return logistic(jnp.mean(jnp.tanh(a.reshape(D, 1) @ q["W"]) @ q["v"]), t)
    return pytree_loss(init({"W": (1, K), "v": (K,)}), loss)


def cnn2d():
    "The 7 features as a 1×7 image: two 2-D convs (the first with a bias broadcast over positions), ReLU, a dense head."
    def loss(q, a, t):
        h = jax.nn.relu(jax.lax.conv_general_dilated(a.reshape(1, 1, 1, D), q["K1"], (1, 1), "SAME") + q["c1"][None, :, None, None])
        h = jax.lax.conv_general_dilated(h, q["K2"], (1, 2), "VALID")
        return logistic(h.reshape(-1) @ q["w"] + q["b"], t)
    return pytree_loss(init({"K1": (3, 1, 1, 3), "c1": (3,), "K2": (2, 3, 1, 3), "w": (2 * 3,), "b": ()}), loss)


def embedding():
    "Token ids (the features' integer parts mod 5) looked up in a 5×3 table (a gather), mean-pooled, a dense head."
    def loss(q, a, t):
        ids = jnp.mod(jnp.floor(jnp.abs(a) * 3), 5).astype(jnp.int32)
        return logistic(jnp.mean(q["E"][ids], axis=0) @ q["w"] + q["b"], t)
    return pytree_loss(init({"E": (5, 3), "w": (3,), "b": ()}), loss)


def layernorm_sequence():
    "A sequence (7 steps of 1 feature) through a dense layer, LayerNorm with scale and shift, a residual connection, a dense head."
    def loss(q, a, t):
        h = a.reshape(D, 1) @ q["W"] + q["c"]
        mu, var = h.mean(-1, keepdims=True), h.var(-1, keepdims=True)
        z = (h - mu) / jnp.sqrt(var + 1e-5) * q["g"] + q["beta"]
        z = z + jnp.tanh(z @ q["R"])                                     # a residual block
        return logistic(jnp.mean(z @ q["v"]), t)
    return pytree_loss(init({"W": (1, K), "c": (K,), "g": (K,), "beta": (K,), "R": (K, K), "v": (K,)}), loss)


def groupnorm_conv():
    "A 1-D conv to 4 channels, GroupNorm (2 groups) with per-channel scale and shift broadcast over positions, a dense head."
    def loss(q, a, t):
        h = jax.lax.conv_general_dilated(a[None, None, :], q["K"], (1,), "SAME")[0]          # (4, D)
        g = h.reshape(2, 2 * D); g = (g - g.mean(-1, keepdims=True)) / jnp.sqrt(g.var(-1, keepdims=True) + 1e-5)
        h = g.reshape(4, D) * q["s"][:, None] + q["o"][:, None]
        return logistic(jnp.sum(jax.nn.relu(h) * q["w"]), t)
    return pytree_loss(init({"K": (4, 1, 3), "s": (4,), "o": (4,), "w": (4, D)}), loss)


def dynamic_slice_embedding():
    "A table row picked by an index read from the example (`lax.dynamic_slice` with an example-dependent start), a dense path beside it."
    def loss(q, a, t):
        i = jnp.clip(jnp.floor(jnp.abs(a[0]) * 3).astype(jnp.int32), 0, 4)
        return logistic(jax.lax.dynamic_slice(q["E"], (i, jnp.int32(0)), (1, 3))[0] @ q["w"] + a[1:] @ q["v"], t)
    return pytree_loss(init({"E": (5, 3), "w": (3,), "v": (D - 1,)}), loss)


def grouped_weights():
    "A weight with a batch axis (one 4×3 matrix per group of 3 features: dot_general with batch dims on the parameter), a scalar scale."
    def loss(q, a, t): return logistic(jnp.sum(jnp.tanh(jnp.einsum("kij,kj->ki", q["W"], a[:6].reshape(2, 3)))) + a[6] * q["b"], t)
    return pytree_loss(init({"W": (2, 4, 3), "b": ()}), loss)


FAST = {"mlp_relu": mlp_relu, "mlp_tanh2": mlp_tanh2, "logreg": logreg, "logreg_nobias": logreg_nobias,
        "variants": variants, "softmax_int_labels": softmax_int_labels, "nested_jit_layers": nested_jit_layers,
        "sequence": sequence, "conv1d": conv1d, "cnn2d": cnn2d, "embedding": embedding, "layernorm_sequence": layernorm_sequence,
        "groupnorm_conv": groupnorm_conv, "dynamic_slice_embedding": dynamic_slice_embedding, "grouped_weights": grouped_weights}
SLOW = {"param_in_nonlinearity": param_in_nonlinearity, "tied_weights": tied_weights, "padded_weights": padded_weights}
MODELS = {**FAST, **SLOW}          # FAST: the ghost path applies; SLOW: it falls back to vmap(grad)


def batch(B=33, seed=3, int_labels=False, dtype=jnp.float64):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((B, D)) * 1.5
    y = rng.integers(0, 3, B) if int_labels else rng.choice([-1.0, 1.0], B)
    return jnp.asarray(A, dtype), jnp.asarray(y) if int_labels else jnp.asarray(y, dtype)


def check(f, x, A, y, clip, expect_fast, rtol=1e-12):
    fn = jax_clipped_sum_fn(f)
    S, nclip, nbad = fn(x, A, y, clip)
    R, rclip, rbad = reference(f, x, A, y, clip)
    plan = fn.plan_for(x, A, y)
    assert plan.fast == expect_fast, plan.describe()
    assert np.all(np.isfinite(S))
    assert np.max(np.abs(S - R)) <= rtol * np.max(np.abs(R)), (np.max(np.abs(S - R)), np.max(np.abs(R)))
    assert (nclip, nbad) == (rclip, rbad)
    return plan, nclip, nbad


def test_the_package_imports_without_jax_ghost():
    "`import dpnotebooks` must not import jax (an optional extra): from_jax imports this module inside the function."
    code = "import sys, dpnotebooks; print('jax' in sys.modules, 'dpnotebooks.problems.jax_ghost' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["False", "False"], out.stdout + out.stderr


@pytest.mark.parametrize("name", ["variants", "softmax_int_labels", "cnn2d", "embedding", "layernorm_sequence", "groupnorm_conv"])
def test_agrees_fast(name):
    "Subtracted and broadcast biases, scales, a transposed weight; integer labels indexing the logits; conv, embedding, norm layers."
    f, x = MODELS[name]()
    A, y = batch(int_labels=name == "softmax_int_labels")
    check(f, x, A, y, 0.7, True)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(FAST) + list(SLOW))
@pytest.mark.parametrize("clip", [1e-3, 0.7, 1e6])                    # all clipped, some, none
def test_agrees_with_vmap_grad(name, clip):
    f, x = MODELS[name]()
    A, y = batch(int_labels=name == "softmax_int_labels")
    plan, nclip, _ = check(f, x, A, y, clip, name in FAST)
    if clip == 1e6: assert nclip == 0
    if clip == 1e-3: assert nclip == A.shape[0]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["mlp_relu", "mlp_tanh2", "logreg", "param_in_nonlinearity", "cnn2d", "layernorm_sequence"])
def test_nonfinite_rows_are_counted_and_contribute_zero(name):
    f, x = MODELS[name]()
    A, y = batch()
    A = A.at[2, 1].set(jnp.nan).at[5, 0].set(jnp.inf).at[9].set(-jnp.inf)
    _, nclip, nbad = check(f, x, A, y, 0.7, name in FAST)
    assert nbad == 3
    keep = np.setdiff1d(np.arange(A.shape[0]), [2, 5, 9])             # S equals the clipped sum over the clean rows
    S = jax_clipped_sum_fn(f)(x, A, y, 0.7)[0]
    R = reference(f, x, A[keep], y[keep], 0.7)[0]
    assert np.max(np.abs(S - R)) <= 1e-12 * np.max(np.abs(R))


def test_fallback_reasons():
    for name, word in [("param_in_nonlinearity", "exp"), ("tied_weights", "twice"), ("padded_weights", "concatenate")]:
        f, x = SLOW[name]()
        plan = jax_clipped_sum_fn(f, x, D).plan
        assert not plan.fast and word in plan.reason, (name, plan.reason)
        assert plan.describe().startswith("fallback (vmap(grad)): ")


def test_fast_path_structure():
    "The MLP's four uses are found, and a dense layer and its bias share one tap (one backward for both)."
    f, x = mlp_relu()
    plan = jax_clipped_sum_fn(f, x, D).plan
    assert [u.kind for u in plan.uses] == ["dot", "add", "dot", "add"]
    assert plan.uses[0].tap == plan.uses[1].tap and plan.uses[2].tap == plan.uses[3].tap
    assert plan.describe() == f"ghost: 4 uses dot({D}, {K}), add({K},), dot({K},), add()"



def test_a_logit_computed_twice_stays_on_the_ghost_path():
    "`logaddexp(0, logit(q, a)) - y * logit(q, a)` traces the network twice; repeated equations are merged (04e, 72, 63 write it so)."
    def logit(q, a): return jax.nn.relu(a @ q["W1"] + q["b1"]) @ q["w2"] + q["b2"]
    f, x = pytree_loss(init({"W1": (D, K), "b1": (K,), "w2": (K,), "b2": ()}), lambda q, a, t: jnp.logaddexp(0., logit(q, a)) - t * logit(q, a))
    A, y = batch(B=8)
    plan, _, _ = check(f, x, A, (y > 0).astype(A.dtype), 0.7, True)
    assert plan.describe() == f"ghost: 4 uses dot({D}, {K}), add({K},), dot({K},), add()"
    g = lambda x, a, t: jnp.exp(a @ x) + jnp.exp(a @ x) * t                   # one weight vector, one use after the merge
    assert jax_clipped_sum_fn(g).plan_for(x[:D], A, y).describe() == f"ghost: 1 uses dot({D},)"

@pytest.mark.slow
@pytest.mark.parametrize("name", ["mlp_relu", "mlp_tanh2", "logreg", "cnn2d", "groupnorm_conv"])
def test_float32(name):
    f, x = FAST[name]()
    A, y = batch(dtype=jnp.float32)
    x32 = jnp.asarray(x, jnp.float32)
    fn = jax_clipped_sum_fn(f)
    S, nclip, nbad = fn(x32, A, y, 0.7)
    assert S.dtype == np.float32 and fn.plan_for(x32, A, y).fast
    R, rclip, _ = reference(f, x, jnp.asarray(A, jnp.float64), jnp.asarray(y, jnp.float64), 0.7)
    assert np.max(np.abs(S - R)) <= 1e-5 * np.max(np.abs(R)) and nbad == 0 and abs(nclip - rclip) <= 1


@pytest.mark.slow
def test_guard_where_agrees_with_cond():
    f, x = mlp_tanh2()
    A, y = batch()
    A = A.at[4, 3].set(jnp.nan)
    a = jax_clipped_sum_fn(f, guard="cond")(x, A, y, 0.7)
    b = jax_clipped_sum_fn(f, guard="where")(x, A, y, 0.7)
    np.testing.assert_allclose(a[0], b[0], rtol=1e-13, atol=0)
    assert a[1:] == b[1:]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["mlp_relu", "param_in_nonlinearity"])
def test_bucketed_batch_sizes(name):
    "Batches of 5..33 rows are padded to 8/16/40 and masked: same result as unpadded, one compile per bucket."
    f, x = MODELS[name]()
    A, y = batch(B=33)
    A = A.at[1, 0].set(jnp.nan)
    fn, fn0 = jax_clipped_sum_fn(f), jax_clipped_sum_fn(f, bucket=False)
    for b in (5, 9, 16, 33):
        S, nclip, nbad = fn(np.asarray(x), np.asarray(A[:b]), np.asarray(y[:b]), 0.7)
        R, rclip, rbad = reference(f, x, A[:b], y[:b], 0.7)
        assert np.max(np.abs(S - R)) <= 1e-12 * np.max(np.abs(R)) and (nclip, nbad) == (rclip, rbad) and nbad == 1
        S0 = fn0(x, A[:b], y[:b], 0.7)[0]
        assert np.max(np.abs(S - S0)) <= 1e-12 * np.max(np.abs(R))
    assert fn.packed._cache_size() == 3                               # 8, 16 (9 and 16 rows), 40


def test_layer_uses_of_conv_embedding_and_norm_models():
    "Which use each parameter tensor gets: the conv kernels and the embedding table through their equation's VJP, a bias or a norm's scale broadcast over positions as a layer add/mul."
    want = {"cnn2d": "ghost: 5 uses conv_general_dilated(3, 1, 1, 3), add(1, 3, 1, 1), conv_general_dilated(2, 3, 1, 3), dot(6,), add()",
            "embedding": "ghost: 3 uses gather(5, 3), dot(3,), add()",
            "conv1d": "ghost: 2 uses conv_general_dilated(1, 1, 3), add()",
            "dynamic_slice_embedding": f"ghost: 3 uses dynamic_slice(5, 3), dot(3,), dot({D - 1},)",
            "grouped_weights": "ghost: 2 uses dot_general(2, 4, 3), mul()"}
    for name, line in want.items():
        f, x = FAST[name]()
        assert jax_clipped_sum_fn(f, x, D).plan.describe() == line, jax_clipped_sum_fn(f, x, D).plan.describe()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["cnn2d", "conv1d"])
def test_a_nonfinite_row_stays_in_its_row_on_both_paths(name):
    "XLA computes a vmapped conv kernel gradient with the batch folded into groups, where one NaN reaches every row: both paths keep it in its row."
    f, x = FAST[name]()
    A, y = batch()
    A = A.at[2, 1].set(jnp.nan).at[5, 0].set(jnp.inf)
    R, rclip, rbad = reference(f, x, A, y, 0.7)
    assert rbad == 2
    for fn in (jax_clipped_sum_fn(f), vmap_clipped_sum_fn(f)):
        out = fn(x, A, y, 0.7)
        S, nclip, nbad = (out[0], out[1], out[2]) if isinstance(out, tuple) else (np.asarray(out[:-2]), int(out[-2]), int(out[-1]))
        assert np.max(np.abs(S - R)) <= 1e-12 * np.max(np.abs(R)) and (nclip, nbad) == (rclip, rbad)


def test_a_large_embedding_table_is_never_formed_per_sample():
    "A 20,000 × 8 table: the lookup's norm comes from its T × T id matches (`lookup_ids` recognises jnp's gather) and agrees with the reference."
    from dpnotebooks.problems.jax_layers import lookup_ids
    def loss(q, a, t):
        ids = jnp.floor(jnp.abs(a) * 7919).astype(jnp.int32) % 20000
        return logistic(jnp.mean(q["E"][ids], axis=0) @ q["w"], t)
    f, x = pytree_loss(init({"E": (20000, 8), "w": (8,)}), loss)
    A, y = batch(B=16)
    plan, _, _ = check(f, x, A, y, 0.3, True)
    u = next(u for u in plan.uses if u.kind == "layer")
    assert u.eqn.prim.name == "gather" and lookup_ids("gather", u.eqn.params, u.pos, u.idx.shape, jnp.zeros((16, D, 1), jnp.int32)) is not None


def test_a_wide_dense_layer_over_positions_takes_the_gram_norms():
    "7 positions through a 16 × 16 dense layer: T²(k + o) = 1,568 < T·k·o = 1,792 per sample, so its norm comes from two Gram matrices; it agrees with the reference."
    from dpnotebooks.problems.jax_layers import positions_norms
    def loss(q, a, t):
        h = jnp.tanh(a[:, None] * q["U"])                                  # (7, 16): a position per feature
        return logistic(jnp.sum(jnp.tanh(h @ q["W"]) @ q["v"]), t)
    f, x = pytree_loss(init({"U": (16,), "W": (16, 16), "v": (16,)}), loss)
    A, y = batch(B=12)
    for clip in (0.05, 1e6): check(f, x, A, y, clip, True)
    H, G = jnp.ones((2, D, 16)), jnp.ones((2, D, 16))
    np.testing.assert_allclose(positions_norms(H, G), np.full(2, D ** 2 * 16 * 16), rtol=1e-12)        # all ones: every entry of HᵀΓ is 7, so ‖HᵀΓ‖² = 7²·256
