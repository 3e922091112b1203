"""The array backend: reproducible RNG on every backend, clear errors for unusable backends."""
import os, subprocess, sys
from pathlib import Path
import numpy as np
import pytest
from dpnotebooks.core import backend as B

ROOT = Path(__file__).resolve().parent.parent
needs_no_gpu = pytest.mark.skipif("cupy" in B.available_backends(), reason="a CUDA GPU is available here")

def test_backend_fixture_selects_backend(backend):
    assert B.get_backend() == backend
    x = B.asarray([1.0, 2.0])
    import array_api_compat
    assert array_api_compat.is_array_api_obj(x) and x.dtype == B.get_dtype()
    if B.get_device() is not None: assert array_api_compat.device(x) == B.get_device()
    np.testing.assert_array_equal(B.to_numpy(x), [1.0, 2.0])

def test_rng_reproducible(backend):
    draw = lambda rng: [B.to_numpy(a) for a in (rng.normal((3, 4)), rng.uniform(5), rng.integers(0, 10, 6),
                                                 rng.sphere(2, 3), rng.ball(2, 3, r=0.5))]
    a, b = draw(B.RNG(7)), draw(B.RNG(7))
    for u, v in zip(a, b): np.testing.assert_array_equal(u, v)
    assert not np.array_equal(a[0], B.to_numpy(B.RNG(8).normal((3, 4))))
    assert B.RNG(7).seeded and not B.RNG().seeded

def test_rng_state_roundtrip_and_children(backend):
    rng = B.RNG(3); rng.normal(4)
    twin = B.RNG.from_state(rng.state)
    np.testing.assert_array_equal(B.to_numpy(rng.normal(5)), B.to_numpy(twin.normal(5)))
    c1, c2 = rng.child(1), rng.child(2)
    assert not np.array_equal(B.to_numpy(c1.normal(5)), B.to_numpy(c2.normal(5)))
    np.testing.assert_array_equal(B.to_numpy(B.RNG(3).child(1).normal(5)), B.to_numpy(rng.child(1).normal(5)))

def test_backend_restored_after_fixture():
    assert B.get_backend() == "numpy"

@needs_no_gpu
def test_cupy_without_gpu_is_a_clear_error():
    with pytest.raises(B.BackendUnavailableError, match=r"dpnotebooks\[gpu\]"): B.set_backend("cupy")
    assert B.get_backend() == "numpy"  # a refused switch leaves the backend unchanged
    with pytest.raises(B.BackendUnavailableError):
        with B.use_backend("cupy"): pass
    assert B.get_backend() == "numpy"

def _import_with_env(**env):
    return subprocess.run([sys.executable, "-c", "import dpnotebooks.core.backend"], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, **env}, timeout=120)

def test_env_nonsense_backend_fails_clearly():
    res = _import_with_env(DPNB_BACKEND="nonsense")
    assert res.returncode != 0
    last = res.stderr.strip().splitlines()[-1]
    assert "ValueError" in last and "DPNB_BACKEND='nonsense'" in last and "numpy" in last and "cupy" in last, res.stderr

@needs_no_gpu
def test_env_cupy_without_gpu_fails_clearly():
    "DPNB_BACKEND naming a backend this machine lacks: the import warns and runs numpy (so `dpnb --help` works); `dpnb` refuses to run on it unless --backend is given."
    import os, subprocess, sys
    res = _import_with_env(DPNB_BACKEND="cupy")
    assert res.returncode == 0 and "DPNB_BACKEND='cupy'" in res.stderr and "dpnotebooks[gpu]" in res.stderr and "numpy backend runs instead" in res.stderr, res.stderr
    cli = lambda *a: subprocess.run([sys.executable, "-c", "import sys; from dpnotebooks.interface.cli import main; sys.exit(main())", *a],
                                    capture_output=True, text=True, env=dict(os.environ, DPNB_BACKEND="cupy"))
    r = cli("list"); assert r.returncode == 2 and "dpnb: error: DPNB_BACKEND='cupy'" in r.stderr and "--backend numpy" in r.stderr, r.stderr
    assert cli("--backend", "numpy", "list").returncode == 0

def test_env_numpy_imports():
    res = _import_with_env(DPNB_BACKEND="numpy", DPNB_DTYPE="float32")
    assert res.returncode == 0, res.stderr

def test_float32_mode_keeps_privacy_noise_and_accounting_float64():
    "float32 speeds up the kernels only: noise is drawn in float64 and the ledger is the float64 run's."
    import numpy as np
    from dpnotebooks.privacy.tree import TreeMechanism
    from dpnotebooks.planning.minimize import minimize
    from dpnotebooks.problems.base import get_problem
    run = lambda: minimize(get_problem("robust-regression", n=3000, d=4, seed=0), "klt-single-pass", epsilon=1.0, delta=1e-5, alpha=0.1, seed=0)
    with B.use_backend("numpy", "float32"):
        assert B.make_rng(0).normal(3).dtype == np.float32 and B.make_rng(0).normal(3, dtype=B.NOISE_DTYPE).dtype == np.float64
        assert TreeMechanism(4, 1.0, 8, rng=0).noise(1).dtype == np.float64
        assert get_problem("robust-regression", n=10, d=4).data.A.dtype == np.float32
        r32 = run()
    r64 = run()
    assert r32.ledger.to_dicts() == r64.ledger.to_dicts() and r32.epsilon_spent == r64.epsilon_spent <= 1.0 + 1e-9
    assert np.all(np.isfinite(r32.x)) and r32.max_uses_per_sample == 1
