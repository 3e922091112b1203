"""ABGGMU Thm 2's fingerprinting bound and instance (nbs/problems/04g_lower_bounds.ipynb): exact μ_m, the bound's shape, the data."""
import math
import numpy as np
import pytest
from dpnotebooks.problems.lower_bounds import _fp_mu, thm2_fp_bound, thm2_bound
from dpnotebooks.problems.base import get_problem


def fp(n, d, m, seed=0, **kw):
    "Thm 2's fingerprinting instance, `fingerprint=m` rows."
    return get_problem("abggmu-lower-bound", n=n, d=d, seed=seed, theorem=2, fingerprint=m, **kw)
from dpnotebooks.core.backend import to_numpy


def test_fp_mu_closed_forms_and_jensen():
    assert math.isclose(_fp_mu(1), 2 / 3, rel_tol=1e-12) and math.isclose(_fp_mu(2), 11 / 24, rel_tol=1e-12)
    mus = np.array([_fp_mu(m) for m in range(1, 60)])
    assert (np.diff(mus) < 0).all()                                       # more rows, closer to p
    assert (mus < np.sqrt(2 / (3 * np.arange(1, 60)))).all()             # Jensen: E|ȳ − p| ≤ √(E(ȳ − p)²)


def test_fp_mu_against_monte_carlo():
    rng = np.random.default_rng(7); p = rng.uniform(-1, 1, 200_000)
    for m in (4, 37):
        e = np.abs(rng.binomial(m, (1 + p) / 2) * 2 / m - 1 - p)
        assert abs(_fp_mu(m) - e.mean()) < 3 * e.std() / math.sqrt(e.size)


def test_thm2_fp_bound_shape():
    n, eps, delta = 10_000, 0.05, 1e-6
    b = [thm2_fp_bound(n, d, eps, delta)[0] for d in (4, 8, 16, 32, 64, 256)]
    assert b[0] > 0 and (np.diff(b) > 0).all()                            # positive and growing with d
    lim = lambda d: math.sqrt(6 * d) / (144 * n * math.expm1(eps))       # the large-d limit bounds it from above
    assert all(bi <= lim(d) for bi, d in zip(b, (4, 8, 16, 32, 64, 256)))
    assert math.isclose(thm2_fp_bound(2 * n, 64, eps, delta)[0] * 2, b[4], rel_tol=1e-12)   # ∝ 1/n once n ≥ m
    assert thm2_fp_bound(n, 64, 1.0, 1e-6)[0] == 0.0                      # vacuous at ε = 1 in small d
    assert thm2_fp_bound(n, 256, eps, delta)[0] > thm2_bound(n, eps, delta)[0]   # beats the d-free bound by d = 256


def test_fingerprint_instance_data():
    X = to_numpy(fp(40, 9, 12, seed=5, L0=2.0, L1=4.0).data.A)
    assert X.shape == (40, 9) and not X[12:].any()
    assert np.allclose(np.linalg.norm(X[:12], axis=1), 2.0 / 4.0 / 4)     # rows of norm B/4, B = L0/L1
    assert np.array_equal(X, to_numpy(fp(40, 9, 12, seed=5, L0=2.0, L1=4.0).data.A))
    assert not np.array_equal(X, to_numpy(fp(40, 9, 12, seed=6, L0=2.0, L1=4.0).data.A))
    with pytest.raises(ValueError, match="must be in 1..n−1"): fp(10, 3, 10)
    with pytest.raises(ValueError, match="needs theorem=2"): get_problem("abggmu-lower-bound", n=9, d=2, theorem=7, fingerprint=3)
    assert thm2_fp_bound(12, 64, 0.05, 1e-6)[1] <= 11                    # the bound's m always fits the instance


def test_fingerprint_instance_gradient(backend):
    P = fp(30, 5, 8, seed=1)
    w = np.random.default_rng(0).normal(size=(3, 5)) * 0.1
    g = to_numpy(P.full_grad(w)); xbar = to_numpy(P.data.A).mean(0)
    assert np.allclose(g, w - xbar, atol=1e-12)                          # quadratic region: ∇F = L1(w − x̄)


def test_gaussian_mechanism_sits_above():
    "The Gaussian mechanism on x̄ is (ε, δ)-DP (replace-one sensitivity (B/2)/n), so its mean norm must exceed the bound."
    n, eps, delta, rng = 500, 0.05, 1e-6, np.random.default_rng(3)
    for d in (8, 32):
        b, m = thm2_fp_bound(n, d, eps, delta)
        G = []
        for seed in range(20):
            xbar = to_numpy(fp(n, d, m, seed).data.A).mean(0)
            w = xbar + rng.normal(size=(200, d)) * 0.5 / n * math.sqrt(2 * math.log(1.25 / delta)) / eps
            G.append(np.minimum(np.linalg.norm(w - xbar, axis=1), 0.5).mean())
        assert np.mean(G) >= b


@pytest.mark.slow
def test_dpsgd_norms_grow_with_d_above_bound():
    "A small reproduction of the notebook's d-sweep: dp-sgd at d = 4 and 64 (n = 12000, ε = 0.05), three seeds."
    from dpnotebooks.planning.minimize import minimize
    n, eps, delta, out = 12_000, 0.05, 1e-6, {}
    for d in (4, 64):
        b, m = thm2_fp_bound(n, d, eps, delta); g = []
        for s in range(3):
            P = fp(n, d, m, s)
            g.append(np.linalg.norm(P.full_grad(minimize(P, "dp-sgd", epsilon=eps, delta=delta, seed=s, Phi=1.0).x[None])[0]))
        out[d] = np.array(g); assert out[d].mean() >= b
    assert out[64].min() > out[4].max()
