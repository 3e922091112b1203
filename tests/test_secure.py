"""Secure randomness and replay: secure mode runs every algorithm from a cryptographic generator, refuses a
seed, and says so; the noise's entropy never appears in what a run returns; checkpoints (which hold it) are owner-only."""
import json, os
import numpy as np
import pytest
import dpnotebooks.core.backend as backend
from dpnotebooks.interface.cli import main
from dpnotebooks.planning.request import run_algorithm
from dpnotebooks.planning.minimize import minimize
from dpnotebooks.problems.base import get_problem

CASES = [("dp-sgd", "logistic", {}), ("abggmu-spider", "logistic", dict(L1=0.25)), ("klt-single-pass", "robust-regression", {}),
         ("klt-first-order", "robust-regression", {})]

@pytest.mark.parametrize("algorithm,problem,kw", CASES, ids=[c[0] for c in CASES])
def test_secure_runs_every_algorithm_and_says_so(algorithm, problem, kw):
    p = get_problem(problem, n=2000, d=3, seed=0)
    a, b = (minimize(p, algorithm, epsilon=1.0, delta=1e-6, secure=True, **kw) for _ in range(2))
    assert a.secure and not a.seeded and "secure generator" in repr(a) and np.all(np.isfinite(a.x))
    assert not np.array_equal(a.x, b.x)                              # fresh OS entropy each run
    assert a.ledger == minimize(p, algorithm, epsilon=1.0, delta=1e-6, seed=0, **kw).ledger   # same plan, same price

def test_secure_refuses_a_seed_before_reading_data():
    p = get_problem("logistic", n=500, d=3, seed=0)
    with pytest.raises(ValueError, match="takes no seed"):
        minimize(p, "dp-sgd", epsilon=1.0, delta=1e-6, seed=3, secure=True)

def test_secure_draws_every_random_number_from_shake(monkeypatch):
    "In secure mode no PCG64 generator is ever built: every draw of the run comes from `SecureGenerator`."
    def refuse(*a, **k): raise AssertionError("a non-cryptographic generator was used in secure mode")
    p = get_problem("logistic", n=500, d=3, seed=0)                 # the (synthetic) data are drawn before, with PCG64
    monkeypatch.setattr(backend.np.random, "PCG64", refuse)
    r = minimize(p, "dp-sgd", epsilon=1.0, delta=1e-6, secure=True, sampling="poisson")
    assert r.secure

def test_dpnb_run_secure_flag(tmp_path, capsys):
    assert main(["run", "dp-sgd", "--problem", "logistic", "--n", "500", "--d", "3", "--epsilon", "1", "--delta", "1e-6", "--secure",
                 "--quiet", "--out", str(tmp_path / "r.json")]) == 0
    r = json.loads((tmp_path / "r.json").read_text())
    assert r["secure"] is True and r["seeded"] is False and "secure noise" in capsys.readouterr().out
    assert main(["run", "dp-sgd", "--n", "500", "--epsilon", "1", "--delta", "1e-6", "--secure", "--seed", "1", "--quiet"]) == 2

@pytest.mark.parametrize("secure", [False, True])
def test_the_entropy_never_leaves_the_run(secure, monkeypatch, tmp_path):
    "The root of an unseeded run's noise is not in the Result, its repr, nor the JSON; the checkpoint that holds it is owner-only."
    root = (1 << 255) + 12345678987654321 if secure else (1 << 127) + 98765432123456789
    monkeypatch.setattr(backend.secrets, "randbits", lambda k: root)
    p = get_problem("logistic", n=2000, d=3, seed=0)
    res = minimize(p, "dp-sgd", epsilon=1.0, delta=1e-6, secure=secure, checkpoint=tmp_path / "run.ck")
    rec = run_algorithm("dp-sgd", "logistic", n=2000, d=3, epsilon=1.0, delta=1e-6, secure=secure)
    for text in (repr(res), str(res._asdict()), json.dumps(rec)):
        assert str(root) not in text and hex(root)[2:] not in text
    assert os.stat(tmp_path / "run.ck").st_mode & 0o777 == 0o600
