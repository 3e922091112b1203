"""Property-based tests (hypothesis), issue 9 §4: the tree mechanism's structure and exact variance, estimator shapes and
norm bounds, clipping bounds, the accountant's monotonicity, and recipes whose plans always fit their budget and data."""
import math
import numpy as np
from hypothesis import given, settings, strategies as st, HealthCheck
from dpnotebooks.backend import make_rng
from dpnotebooks.clipping import clip_rows
from dpnotebooks.ledger import Ledger, Release
from dpnotebooks.minimize import ALGORITHMS
from dpnotebooks.privacy import calibrate_gaussian, calibrate_tree, tree_levels
from dpnotebooks.problems import get_problem
from dpnotebooks.smoothing import zo_two_point
from dpnotebooks.tree import TreeMechanism, node_decomposition, nodes_containing

FAST = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])

@FAST
@given(length=st.integers(1, 4096), data=st.data())
def test_tree_node_counts(length, data):
    "|NODE(t)| = popcount(t) ≤ ⌊log₂Σ⌋+1, the blocks tile [1, t]; each leaf lies in at most ⌊log₂Σ⌋+1 nodes (what the accountant charges)."
    t = data.draw(st.integers(1, length))
    nodes = node_decomposition(t)
    assert len(nodes) == bin(t).count("1") <= tree_levels(length)
    assert nodes[0][0] == 1 and nodes[-1][1] == t and all(a[1] + 1 == b[0] for a, b in zip(nodes, nodes[1:]))
    i = data.draw(st.integers(1, length))
    path = nodes_containing(i, length)
    assert 1 <= len(path) <= tree_levels(length) and all(u <= i <= v for u, v in path)

@FAST
@given(length=st.integers(1, 200), d=st.integers(1, 5), sigma=st.floats(0.1, 10.0), seed=st.integers(0, 2**31))
def test_tree_release_is_exactly_its_nodes(length, d, sigma, seed):
    "TREE(t) is exactly the sum of popcount(t) held N(0, σ²I) nodes, so its variance is exactly popcount(t)·σ² per coordinate."
    tm = TreeMechanism(d, sigma, length, rng=seed)
    for t in range(1, length + 1):
        out = tm.noise(t)
        held = tm.state.nodes
        assert len(held) == bin(t).count("1") and [(u, v) for u, v, _ in held] == node_decomposition(t)
        total = held[0][2]
        for _, _, z in held[1:]: total = total + z
        assert np.array_equal(out, total) and out.dtype == np.float64

@FAST
@given(d=st.integers(1, 8), m=st.integers(1, 16), b=st.integers(1, 12), alpha=st.floats(1e-3, 1.0), seed=st.integers(0, 2**31))
def test_two_point_estimates_shape_and_norm_bound(d, m, b, alpha, seed):
    "Per-sample two-point estimates have shape (b, d) and norm ≤ d·L (|f(x+αu) − f(x−αu)| ≤ 2αL, ||u|| = 1)."
    p = get_problem("robust-regression", n=b, d=d, seed=seed % 1000)
    x = p.x0 + make_rng(seed).normal(d)
    G = np.asarray(zo_two_point(p, x, p.data, alpha, m, rng=seed, per_sample=True))
    assert G.shape == (b, d) and np.all(np.isfinite(G))
    assert np.all(np.linalg.norm(G, axis=1) <= d * p.L * (1 + 1e-9))

@FAST
@given(rows=st.integers(1, 30), d=st.integers(1, 10), bound=st.floats(1e-3, 1e3), scale=st.floats(1e-4, 1e4), seed=st.integers(0, 2**31))
def test_clip_rows_bounds_and_leaves_short_rows(rows, d, bound, scale, seed):
    G = np.asarray(make_rng(seed).normal((rows, d))) * scale
    c = clip_rows(G, bound)
    norms, out = np.linalg.norm(G, axis=1), np.asarray(c.values)
    assert np.all(np.linalg.norm(out, axis=1) <= bound * (1 + 1e-12))
    short = norms <= bound
    assert np.array_equal(out[short], G[short]) and c.clipped == int((~short).sum()) and c.total == rows

@settings(max_examples=20, deadline=None)
@given(sigma=st.floats(0.5, 20.0), more=st.floats(1.0, 3.0), count=st.integers(1, 200), extra=st.integers(1, 200),
       mech=st.sampled_from(["gaussian", "tree"]))
def test_accountant_monotone(sigma, more, count, extra, mech):
    "More noise never costs more ε; more steps never cost less."
    spent = lambda s, k: Ledger((Release(mech, 1.0, s, k),)).spent(1e-6)
    e = spent(sigma, count)
    assert spent(sigma * more, count) <= e * (1 + 1e-9) + 1e-12
    assert spent(sigma, count + extra) >= e * (1 - 1e-9) - 1e-12

@settings(max_examples=20, deadline=None)
@given(eps=st.floats(0.1, 8.0), delta=st.floats(1e-9, 1e-3), s=st.floats(0.01, 10.0), k=st.integers(1, 500), length=st.integers(1, 4096))
def test_calibration_meets_its_target(eps, delta, s, k, length):
    "The calibrated σ spends at most ε (and is tight: 0.98σ would overspend for these sizes)."
    sg, st_ = calibrate_gaussian(eps, delta, s, k), calibrate_tree(eps, delta, s, length)
    for mech, sigma, n in (("gaussian", sg, k), ("tree", st_, length)):
        assert Ledger((Release(mech, s, sigma, n),)).spent(delta) <= eps * (1 + 1e-6)
        assert Ledger((Release(mech, s, 0.98 * sigma, n),)).spent(delta) > eps * (1 - 1e-3)

@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(algorithm=st.sampled_from(["klt-single-pass", "klt-first-order", "ztc", "ztc-naive"]), n=st.integers(3000, 60000),
       d=st.integers(1, 12), eps=st.floats(0.3, 5.0), log_delta=st.floats(-9.0, -5.0), alpha=st.floats(0.01, 0.5))
def test_recipes_fit_their_budget_and_their_data(algorithm, n, d, eps, log_delta, alpha):
    "Whatever the inputs, a plan's ledger spends at most ε and a single-pass plan reads at most n distinct samples."
    from dpnotebooks.minimize import InsufficientDataError
    delta = 10.0 ** log_delta
    try: plan = ALGORITHMS[algorithm].recipe(n, d, eps, delta, alpha)
    except InsufficientDataError: return                               # refusing is allowed; overspending is not
    assert plan.T >= 1 and plan.D > 0 and plan.sigma > 0 and plan.n_required <= n
    p = get_problem("robust-regression", n=n, d=d, seed=0)
    oracle, _ = ALGORITHMS[algorithm].build(p, plan, make_rng(0))
    assert oracle.releases(plan.T).spent(delta) <= eps * (1 + 1e-6)
    assert oracle.samples_needed(plan.T) <= n
