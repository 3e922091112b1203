"""Empirical privacy audits: correct mechanisms stay below their claim; two deliberately broken ones are caught.

The broken variants live only here: the tree with the papers' printed NODE routine, which releases the
increment at t = Σ (a power of two) with no noise, and a zeroth-order oracle that skips clipping and is fed a loss
that violates its declared Lipschitz constant.
"""
import math
import numpy as np
import pytest
import dpnotebooks.privacy.tree as tree
from dpnotebooks.audits.audit import audit_gaussian, audit_tree, audit_zo_oracle, epsilon_lower_bound
from dpnotebooks.core.smoothing import zo_two_point

EPS, DELTA, N = 1.0, 1e-5, 20000

def paper_node(t, Sigma):
    "NODE(t) exactly as printed in KLT Alg. 1 (001): lengths 2^(L-1), ..., 2^0 with L = ceil(log2 Σ); misses t = Σ = 2^L."
    L = math.ceil(math.log2(Sigma)); S, k = [], 0
    for i in range(1, L + 1):
        if k >= t: break
        k2 = k + 2 ** (L - i)
        if k2 <= t: S.append((k + 1, k2)); k = k2
    return S

def test_paper_node_is_the_documented_bug():
    assert paper_node(4, 4) == paper_node(3, 4) == [(1, 2), (3, 3)]
    assert tree.node_decomposition(4) == [(1, 4)]

@pytest.mark.parametrize("audit", [audit_gaussian, audit_tree, audit_zo_oracle])
def test_correct_mechanisms_stay_below_their_claim(audit):
    res = audit(EPS, DELTA, trials=N, rng=0)
    assert abs(res.epsilon_claimed - EPS) < 1e-3, res      # the calibration spends the budget
    assert not res.violated and res.epsilon_lower < EPS, res

def test_audit_detects_the_printed_node_routine(monkeypatch):
    Sigma = 8
    monkeypatch.setattr(tree, "node_decomposition", lambda t: paper_node(t, Sigma))
    res = audit_tree(EPS, DELTA, length=Sigma, trials=N, rng=0)
    assert res.violated and res.epsilon_lower > 3 * EPS, res

def test_audit_detects_an_oracle_without_clipping():
    unclipped = lambda p, x, b, a, U: zo_two_point(p, x, b, a, m=U.shape[1], U=U, per_sample=True)
    res = audit_zo_oracle(EPS, DELTA, trials=N, estimator=unclipped, rng=0)
    assert res.violated and res.epsilon_lower > 2 * EPS, res

def test_bound_grows_with_true_leakage():
    "A monotonicity sanity check of the bound itself: more separated scores certify more ε."
    rs = np.random.default_rng(0); z = rs.normal(size=(2, N))
    b = [epsilon_lower_bound(z[0] + mu, z[1], DELTA).epsilon_lower for mu in (0.5, 2.0, 4.0)]
    assert b[0] < b[1] < b[2]


def test_every_private_algorithm_names_its_audits_and_every_algorithm_audit_belongs_to_one():
    "A spec's `audits` are entries of `dpnb audit --mechanism`; every private built-in names one; no audit of an algorithm is orphaned."
    from dpnotebooks.planning.catalog import CATALOG
    from dpnotebooks.audits.table import AUDITS
    from dpnotebooks.audits.audit import MECHANISM_AUDITS
    named = {a: s.name for s in CATALOG for a in s.audits}
    assert all(s.audits for s in CATALOG if s.private), [s.name for s in CATALOG if s.private and not s.audits]
    assert set(named) <= set(AUDITS), sorted(set(named) - set(AUDITS))
    assert set(AUDITS) - set(MECHANISM_AUDITS) == set(named), sorted(set(AUDITS) - set(MECHANISM_AUDITS) - set(named))
    assert all(a == s or a.startswith(s + "-") for a, s in named.items()), named      # an audit is named after its algorithm
