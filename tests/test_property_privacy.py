"""Property-based tests (hypothesis): the tree mechanism's structure and exact variance, estimator shapes and
norm bounds, clipping bounds, the accountant's monotonicity, and recipes whose plans always fit their budget and data."""
import math, warnings
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck
from dpnotebooks.core.backend import make_rng
from dpnotebooks.privacy.clipping import clip_rows
from dpnotebooks.privacy.ledger import Ledger, Release
from dpnotebooks.planning.catalog import ALGORITHMS
from dpnotebooks.privacy.accounting import calibrate_gaussian, calibrate_tree, tree_levels
from dpnotebooks.problems.base import get_problem
from dpnotebooks.core.smoothing import zo_two_point
from dpnotebooks.privacy.tree import TreeMechanism, node_decomposition, nodes_containing

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

@settings(max_examples=25, deadline=None, derandomize=True)       # a statistical check: fixed examples, fixed seeds
@given(length=st.integers(1, 1024), sigma=st.floats(0.1, 10.0), data=st.data())
def test_tree_release_has_exactly_popcount_variance(length, sigma, data):
    "Tree mechanism (KLT Lemma 2.8; note's erratum: vector noise, binary decomposition): each coordinate of TREE(t) is N(0, popcount(t)·σ²), independently across coordinates. The sample variance over d = 4000 coordinates matches within 5 standard errors (SE = v·√(2/(d−1)))."
    t, d = data.draw(st.integers(1, length)), 4000
    tm = TreeMechanism(d, sigma, length, rng=length * 7919 + t)
    for s in range(1, t + 1): z = tm.noise(s)                         # the tree is queried in order
    z = np.asarray(z)
    v = bin(t).count("1") * sigma ** 2
    assert abs(z.var(ddof=1) - v) <= 5 * v * math.sqrt(2 / (d - 1)) and abs(z.mean()) <= 5 * math.sqrt(v / d)

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

# algorithm: (problem it is planned for, recipe constants); every registered algorithm
PLANNED = {
    "klt-single-pass": ("robust-regression", {}), "klt-first-order": ("robust-regression", {}), "ztc": ("robust-regression", {}), "ztc-sharp": ("robust-regression", {}),
    "ztc-naive": ("robust-regression", {}), "o2nc-nonprivate": ("robust-regression", {}),
    "klt-multi-pass": ("robust-regression", dict(m=8, max_steps=60)), "dp-sgd": ("robust-regression", {}),
    "abggmu-spider": ("sigmoid-glm", {}), "abggmu-tree-spider": ("sigmoid-glm", {}),
    "abggmu-convex": ("logistic", dict(L1=0.25)), "abggmu-glm": ("logistic", dict(L1=0.25, rank=2)),
    "lt-sosp": ("saddle", {}), "lt-sosp-nonprivate": ("saddle", {}), "lt-sosp-erm": ("saddle", {}), "ganesh-sosp": ("saddle", {}),
}

def test_every_algorithm_has_a_recipe_property():
    assert set(PLANNED) == set(ALGORITHMS)

def _theorem_constraints(name, plan):
    "The constraints each theorem puts on its parameters (beyond the budget), as the recipe must deliver them."
    n, alpha = plan.n, plan.alpha
    p = plan.params
    assert type(p) is ALGORITHMS[name].params                                          # the record the registry names
    if name.startswith("klt-"): assert p.M * p.D <= alpha / 4 * (1 + 1e-9)             # KLT: a block of M steps of length ≤ D stays within α/4
    if name in ("ztc", "ztc-sharp", "ztc-naive", "o2nc-nonprivate"): assert p.M * p.D <= alpha * (1 + 1e-9)   # ZTC: one period moves ≤ α
    if name in ("ztc", "ztc-sharp"): assert p.restart and p.M == p.period
    if name == "dp-sgd": assert 1 <= p.batch <= n
    if name == "abggmu-glm": assert 1 <= p.k; p = p.inner
    if name in ("abggmu-spider", "abggmu-glm") and type(p).__name__ == "SpiderParams":
        assert 1 <= p.b2 <= p.b1 <= n and p.eta <= 1 / (2 * p.L1) * (1 + 1e-12) and p.q >= 1
    if name == "abggmu-tree-spider":
        assert p.b % (p.depth * 2 ** (p.depth + 1)) == 0 and plan.derivation["samples"] <= n   # b rounded to D·2^(D+1); one pass
    if name == "abggmu-convex":
        assert p.T * p.m <= n and len(p.K) == p.T and min(p.K) >= 1   # disjoint stages
    if name == "lt-sosp-erm":
        q = p.sosp; assert n >= plan.derivation["n_min"] >= 2 * q.b + 2 and p.passes * n >= 4 * q.b + 2 * q.T
    elif name.startswith("lt-sosp"): assert n >= plan.derivation["n_min"] >= 4 * p.b + 2 * p.T

# derandomized: the same examples on every run, so CI is reproducible (a random run once found a plan priced 2e-6 above ε;
# `minimize._fit_noise` fixes that class, and 30_minimize keeps the case as a check)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(n=st.integers(2000, 120000), d=st.integers(1, 12), eps=st.floats(0.3, 5.0), log_delta=st.floats(-9.0, -5.0), data=st.data())
@pytest.mark.parametrize("name", sorted(PLANNED))
def test_recipes_fit_their_budget_their_data_and_their_theorem(name, n, d, eps, log_delta, data):
    "Whatever the inputs, a plan spends at most ε (priced by `planned_ledger`, as `minimize` prices it), reads at most n distinct samples if single-pass, and meets its theorem's constraints."
    from dpnotebooks.planning.minimize import plan_run, planned_ledger
    from dpnotebooks.engine.registry import InsufficientDataError
    prob, consts = PLANNED[name]
    alg, delta = ALGORITHMS[name], 10.0 ** log_delta
    alpha = data.draw(st.floats(0.01, 0.5)) if alg.stationarity == "goldstein" else None
    p = get_problem(prob, n=n, d=d, seed=0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")                           # delta >= 1/n warns; that is bad_input's business
            plan = plan_run(p, name, epsilon=eps, delta=delta, alpha=alpha, **consts)
    except InsufficientDataError: return                               # refusing is allowed; overspending is not
    assert plan.algorithm == name and plan.params.T >= 1 and plan.n == n and plan.n_required <= n
    ledger = planned_ledger(p, plan)
    if alg.private:
        assert ledger.spent(delta) <= eps * (1 + 1e-6)
    else: assert ledger.spent(delta) == math.inf
    if alg.build is not None:
        oracle, _ = alg.build(p, plan, make_rng(0))
        if alg.access == "single-pass": assert oracle.samples_needed(plan.params.T) <= n
    _theorem_constraints(name, plan)
