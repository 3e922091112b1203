"""The GPU path tested without a GPU: every registered algorithm, seeded, runs on `array-api-strict` (the
array API's reference implementation, its arrays on an emulated device that refuses implicit host transfers and every
non-standard call) and on torch where it is installed, and releases what the numpy run releases: the same point up to
the summation order of the one contraction the standard lacks (einsum), the same ledger, the same data use."""
import json, warnings
import numpy as np
import pytest
from dpnotebooks.core import backend as B
from dpnotebooks.planning.request import run_algorithm
from test_checkpoint import RUNS, SEED, _reference

_WHY = {"array-api-strict": "array-api-strict is not installed (the [dev] extra)", "torch": "torch is not installed (the [torch] extra)"}
BACKENDS = [pytest.param(b, id=b, marks=() if b in B.available_backends() else pytest.mark.skip(reason=_WHY[b])) for b in _WHY]

def _quiet(fn, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore"); return fn(*a, **k)

# The strict backend checks every operation in Python (5-10x numpy's time); the runs whose length grows with n run on fewer
# samples here than test_checkpoint's RUNS (a few hundred steps still, every code path of the algorithm).
SMALLER_N = {"klt-single-pass": 1000, "klt-first-order": 1000, "ztc": 1000, "o2nc-nonprivate": 600, "abggmu-spider": 400}

def _run(algorithm):
    prob, n, d, kw, ov = RUNS[algorithm]
    return _quiet(run_algorithm, algorithm, prob, SMALLER_N.get(algorithm, n), d, kw.get("epsilon"), kw.get("delta"), kw.get("alpha"), None, SEED, **ov)

_NUMPY = {}
def _numpy_reference(algorithm):
    if algorithm not in _NUMPY: _NUMPY[algorithm] = _run(algorithm)
    return _NUMPY[algorithm]

@pytest.mark.parametrize("backend_name", BACKENDS)
@pytest.mark.parametrize("algorithm", sorted(RUNS))
def test_every_algorithm_runs_on_the_backend_as_on_numpy(algorithm, backend_name):
    ref = _numpy_reference(algorithm)
    with B.use_backend(backend_name): got = _run(algorithm)
    assert got["backend"] == backend_name and B.get_backend() == "numpy"
    assert all(isinstance(v, float) for v in got["x_out"])                    # the released point comes back to the host
    np.testing.assert_allclose(got["x_out"], ref["x_out"], rtol=1e-8, atol=1e-12)
    assert json.dumps(got["privacy"]["events"], sort_keys=True, default=str) == json.dumps(ref["privacy"]["events"], sort_keys=True, default=str)
    assert (got["samples_used"], got["max_uses_per_sample"]) == (ref["samples_used"], ref["max_uses_per_sample"])

# Two host/device mistakes a numpy run cannot see and a GPU run would die of, put back into dp-sgd's hot path on purpose
# (on robust-regression, a linear model, the clipped sum in one product): the strict backend must catch each one, numpy
# must not (so the check above is a check, not a formality).
def _host_sum(real):        # the clipped sum passed through a numpy call: an implicit device -> host transfer
    def clipped_sum(*a, **k):
        S, c = real(*a, **k); return np.sum(S[None, :], axis=0), c
    return clipped_sum

def _hostless_zeros(real):  # an array created without device=: it lands on the default device, not the data's
    def clipped_sum(*a, **k):
        S, c = real(*a, **k); xp = B.get_xp(); return S + xp.zeros(S.shape, dtype=S.dtype), c
    return clipped_sum

@pytest.mark.skipif("array-api-strict" not in B.available_backends(), reason=_WHY["array-api-strict"])
@pytest.mark.parametrize("mistake, message", [(_host_sum, "Can't convert"), (_hostless_zeros, "different devices")])
def test_the_strict_backend_catches_a_host_device_mistake(monkeypatch, mistake, message):
    from dpnotebooks.problems.base import LinearModel
    from dpnotebooks.engine.faults import RunStopped
    monkeypatch.setattr(LinearModel, "clipped_sum", mistake(LinearModel.clipped_sum))
    _quiet(_reference, "dp-sgd")                                               # numpy: runs to the end
    with B.use_backend("array-api-strict"), pytest.raises(RunStopped, match=message): _quiet(_reference, "dp-sgd")
