"""The `dpnb` console script, run as a user would: in a subprocess, from the installed entry point."""
import json, re, subprocess, sys
from pathlib import Path
import pytest

_SCRIPT = Path(sys.executable).parent / "dpnb"   # the console script pip installed beside this interpreter
DPNB = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-c", "import sys; from dpnotebooks.cli import main; sys.exit(main())"]

def run(*args, cwd=None, env=None):
    return subprocess.run(DPNB + list(args), capture_output=True, text=True, cwd=cwd, timeout=300, env=env)

def test_list_names_every_problem():
    from dpnotebooks.problems import list_problems
    res = run("list")
    assert res.returncode == 0, res.stderr
    for name, _ in list_problems(): assert name in res.stdout
    assert "reference-sgd" in res.stdout

def test_demo_writes_table_plot_and_json(tmp_path):
    res = run("demo", "--out", str(tmp_path / "out"), "--steps", "60", "--quiet")
    assert res.returncode == 0, res.stderr
    assert "Goldstein norm" in res.stdout and "seconds:" in res.stdout
    r = json.loads((tmp_path / "out" / "demo.json").read_text())
    assert (tmp_path / "out" / "demo.png").stat().st_size > 1000
    assert r["problem"] == "robust-regression" and r["steps"] == 60 and r["seed"] == 0
    assert r["loss_out"] < r["loss_x0"]
    assert 0 <= r["goldstein_out"] <= 1.0 + 1e-9   # L = 1 bounds every gradient, hence the hull's min norm

def test_demo_is_reproducible_with_a_seed(tmp_path):
    a = run("demo", "--out", str(tmp_path / "a"), "--steps", "20", "--quiet", "--seed", "5")
    b = run("demo", "--out", str(tmp_path / "b"), "--steps", "20", "--quiet", "--seed", "5")
    assert a.returncode == b.returncode == 0
    ra, rb = (json.loads((tmp_path / k / "demo.json").read_text()) for k in "ab")
    assert ra["x_out"] == rb["x_out"] and ra["trace_losses"] == rb["trace_losses"]

@pytest.mark.parametrize("args, message", [
    (["demo", "--steps", "0"], "positive integer"),
    (["frobnicate"], "invalid choice"),
    (["--backend", "tpu", "list"], "invalid choice"),
])
def test_bad_arguments_exit_2_with_a_message(args, message):
    res = run(*args)
    assert res.returncode == 2 and message in res.stderr and "Traceback" not in res.stderr

def test_cupy_without_gpu_is_a_clear_error():
    from dpnotebooks.backend import available_backends
    if "cupy" in available_backends(): pytest.skip("a GPU is present")
    res = run("--backend", "cupy", "list")
    assert res.returncode == 2 and "dpnotebooks[gpu]" in res.stderr and "Traceback" not in res.stderr

@pytest.mark.parametrize("mechanism", ["tree", "gaussian", "zo-oracle"])
def test_audit_prints_bound_beside_claim(mechanism):
    res = run("audit", "--mechanism", mechanism, "--trials", "5000", "--seed", "1", "--epsilon", "1.0", "--delta", "1e-5")
    assert res.returncode == 0, res.stdout + res.stderr
    m = re.search(r"epsilon: claimed ([0-9.]+), empirical lower bound ([0-9.]+)", res.stdout)
    claimed, bound = float(m.group(1)), float(m.group(2))
    assert abs(claimed - 1.0) < 1e-3 and 0 <= bound < claimed

def test_audit_rejects_bad_privacy_parameters():
    for args in (["--epsilon", "0"], ["--delta", "1.5"], ["--delta", "nan"]):
        res = run("audit", "--trials", "100", *args)
        assert res.returncode == 2 and "Traceback" not in res.stderr and "must be" in res.stderr, (args, res.stderr)
