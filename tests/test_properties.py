"""Property-based tests (hypothesis) for the invariants the privacy arguments rest on."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck
from dpnotebooks.core.backend import to_numpy, make_rng, RNG
from dpnotebooks.problems.base import get_problem, list_problems
from dpnotebooks.core.streams import DataStream, SampleReuseError, StreamExhaustedError
from dpnotebooks.core.smoothing import two_point_differences, zo_two_point, fo_smoothed_grad

PROB = get_problem("robust-regression", n=40, d=3, seed=0)

@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(0, 15), max_size=12), seed=st.integers(0, 2**32 - 1))
def test_stream_never_hands_out_a_sample_twice(sizes, seed):
    "KLT Alg. 3: each sample is used once; asking for too many raises and hands out nothing."
    s = DataStream(PROB.data, rng=seed); seen = []
    for b in sizes:
        before = s.remaining
        if b > before:
            with pytest.raises(StreamExhaustedError): s.take(b)
            assert s.remaining == before
        else:
            idx, batch = s.take(b); seen.extend(idx.tolist()); assert len(batch) == b
    assert len(seen) == len(set(seen)) and s.max_uses <= 1 and s.samples_used == len(seen)

@settings(max_examples=40, deadline=None)
@given(first=st.lists(st.integers(0, 39), min_size=1, max_size=10, unique=True), again=st.integers(0, 9))
def test_stream_refuses_explicit_reuse(first, again):
    s = DataStream(PROB.data, rng=0); s.take_indices(first)
    with pytest.raises(SampleReuseError): s.take_indices([first[again % len(first)]])
    assert s.max_uses == 1

@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from([n for n, _ in list_problems()]), alpha=st.floats(1e-3, 2.0), seed=st.integers(0, 1000))
def test_two_point_differences_obey_lipschitz_bound_on_declared_domain(name, alpha, seed):
    "|f(x+αu) − f(x−αu)| ≤ 2Lα wherever the declared L holds (here: near x0, inside every problem's domain)."
    p = get_problem(name, n=16, d=3, seed=seed)
    x = to_numpy(p.x0) * 0.5
    U = make_rng(seed).sphere((16, 4), p.dim)
    D = to_numpy(two_point_differences(p, x, p.data, U, alpha))
    inside = np.linalg.norm(x) + alpha <= getattr(p, "radius", np.inf)
    if inside: assert np.abs(D).max() <= 2 * p.L * alpha * (1 + 1e-9)

@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), m=st.integers(1, 6), b=st.integers(1, 8))
def test_estimators_are_reproducible_and_finite(seed, m, b, ):
    for est in (zo_two_point, fo_smoothed_grad):
        g1 = to_numpy(est(PROB, PROB.x0, PROB.data[:b], 0.1, m, rng=seed, per_sample=True))
        g2 = to_numpy(est(PROB, PROB.x0, PROB.data[:b], 0.1, m, rng=seed, per_sample=True))
        assert g1.shape == (b, PROB.dim) and np.array_equal(g1, g2) and np.all(np.isfinite(g1))

def test_unseeded_rngs_differ_and_say_so():
    a, b = RNG(), RNG()
    assert not a.seeded and a.entropy != b.entropy
    assert not np.array_equal(to_numpy(a.normal(4)), to_numpy(b.normal(4)))

def test_estimators_run_on_each_backend(backend):
    p = get_problem("relu-net", n=12, d=3, seed=1)
    g = zo_two_point(p, p.x0, p.data, 0.1, 3, rng=0)
    assert g.shape == (p.dim,) and np.all(np.isfinite(to_numpy(g)))
