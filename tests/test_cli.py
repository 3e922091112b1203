"""The `dpnb` command line. The console script runs as a user would, in a subprocess from the installed entry point
(`run`: `dpnb list`, `dpnb demo`, a run's JSON contract, the backend chosen at start-up); the refusals, the audits and the
other runs go through the same `main` in this process (`here`, tests/cli_runner.py), without a new interpreter each."""
import json, re
import pytest
from cli_runner import dpnb_process as run, dpnb_here as here

def test_list_names_every_problem():
    from dpnotebooks.problems.base import list_problems
    res = run("list")
    assert res.returncode == 0, res.stderr
    for name, _ in list_problems(): assert name in res.stdout
    assert "reference-sgd" in res.stdout

def test_demo_writes_table_plot_and_json(tmp_path):
    res = run("demo", "--out", str(tmp_path / "out"), "--n", "4000", "--quiet")
    assert res.returncode == 0, res.stderr
    assert "Goldstein norm" in res.stdout and "epsilon spent" in res.stdout
    r = json.loads((tmp_path / "out" / "demo.json").read_text())
    assert (tmp_path / "out" / "demo.png").stat().st_size > 1000
    assert r["problem"] == "robust-regression" and r["n"] == 4000 and r["seed"] == 0
    pv = r["private"]
    assert pv["algorithm"] == "klt-single-pass" and pv["epsilon"] == 1.0 and pv["epsilon_spent"] <= 1.0
    assert pv["max_uses_per_sample"] == 1 and pv["samples_used"] <= 4000
    assert pv["loss_out"] < r["loss_x0"] and r["reference"]["loss_out"] < r["loss_x0"]       # on held-out samples
    assert "held-out" in r["evaluated_on"] and r["n_test"] == 4000 and "clipped_fraction" not in pv
    for g in (r["goldstein_x0"], pv["goldstein_out"], r["reference"]["goldstein_out"]):
        assert 0 <= g <= 1.0 + 1e-9   # L = 1 bounds every gradient, hence the hull's min norm

@pytest.mark.slow
def test_demo_is_reproducible_with_a_seed(tmp_path):
    a = run("demo", "--out", str(tmp_path / "a"), "--n", "3000", "--quiet", "--seed", "5")
    b = run("demo", "--out", str(tmp_path / "b"), "--n", "3000", "--quiet", "--seed", "5")
    assert a.returncode == b.returncode == 0
    ra, rb = (json.loads((tmp_path / k / "demo.json").read_text()) for k in "ab")
    assert ra["private"]["x_out"] == rb["private"]["x_out"] and ra["reference"]["goldstein_out"] == rb["reference"]["goldstein_out"]

def test_run_writes_the_design_contract(tmp_path):
    out = tmp_path / "r.json"
    res = run("run", "klt-single-pass", "--n", "3000", "--d", "4", "--epsilon", "2", "--delta", "1e-5", "--seed", "1",
              "--quiet", "--out", str(out))
    assert res.returncode == 0, res.stderr
    r = json.loads(out.read_text())
    for key in ("algorithm", "problem", "n", "d", "seed", "backend", "privacy", "samples_used", "max_uses_per_sample", "x_out",
                "evaluation", "seconds"):
        assert key in r, key
    assert set(r["privacy"]) >= {"epsilon", "delta", "accountant", "neighbouring", "events"} and r["privacy"]["events"]
    assert r["privacy"]["neighbouring"] == "replace-one" and "held-out" in r["evaluation"]["data"]
    assert set(r["evaluation"]["stationarity"]) >= {"kind", "radius", "at_x0", "at_out"}
    assert not {"nonprivate", "loss_x0", "loss_out", "stationarity", "clipped_fraction"} & set(r)    # nothing on the private data
    assert r["privacy"]["epsilon_spent"] <= 2.0 and r["max_uses_per_sample"] == 1 and len(r["x_out"]) == 4

def test_run_nonprivate_reports_infinite_epsilon(tmp_path):
    out = tmp_path / "r.json"
    res = here("run", "o2nc-nonprivate", "--n", "2000", "--d", "3", "--seed", "0", "--quiet", "--out", str(out))
    assert res.returncode == 0, res.stderr
    r = json.loads(out.read_text())
    assert r["privacy"]["private"] is False and r["privacy"]["epsilon_spent"] is None and "NOT private" in res.stdout

@pytest.mark.parametrize("args, message", [
    (["run", "ztc", "--epsilon", "-1", "--delta", "1e-5"], "`epsilon` must be"),
    (["run", "ztc", "--epsilon", "1", "--delta", "2"], "delta"),
    (["run", "nope", "--epsilon", "1", "--delta", "1e-5"], "Unknown algorithm"),
    (["run", "ztc", "--n", "100", "--epsilon", "1", "--delta", "1e-5", "--beta", "0.01"], "Use at least"),
])
def test_run_refuses_bad_requests(args, message):
    res = here(*args)
    assert res.returncode == 2 and message in res.stderr and "Traceback" not in res.stderr, res.stderr

@pytest.mark.parametrize("args, message", [
    (["demo", "--n", "0"], "positive integer"),
    (["frobnicate"], "invalid choice"),
    (["--backend", "tpu", "list"], "invalid choice"),
])
def test_bad_arguments_exit_2_with_a_message(args, message):
    res = here(*args)
    assert res.returncode == 2 and message in res.stderr and "Traceback" not in res.stderr

def test_cupy_without_gpu_is_a_clear_error():
    from dpnotebooks.core.backend import available_backends
    if "cupy" in available_backends(): pytest.skip("a GPU is present")
    res = run("--backend", "cupy", "list")
    assert res.returncode == 2 and "dpnotebooks[gpu]" in res.stderr and "Traceback" not in res.stderr

@pytest.mark.parametrize("mechanism", ["tree", "gaussian", "zo-oracle"])
def test_audit_prints_bound_beside_claim(mechanism):
    res = here("audit", "--mechanism", mechanism, "--trials", "5000", "--seed", "1", "--epsilon", "1.0", "--delta", "1e-5")
    assert res.returncode == 0, res.stdout + res.stderr
    m = re.search(r"epsilon: claimed ([0-9.]+), empirical lower bound ([0-9.]+)", res.stdout)
    claimed, bound = float(m.group(1)), float(m.group(2))
    assert abs(claimed - 1.0) < 1e-3 and 0 <= bound < claimed

def test_audit_rejects_bad_privacy_parameters():
    for args in (["--epsilon", "0"], ["--delta", "1.5"], ["--delta", "nan"]):
        res = here("audit", "--trials", "100", *args)
        assert res.returncode == 2 and "Traceback" not in res.stderr and "must be" in res.stderr, (args, res.stderr)

def test_json_plan_block_is_the_common_fields_and_the_algorithms_record(tmp_path):
    "`plan.params` names its record (nested for the JL method); a field the record lacks is refused with the fields listed."
    out = tmp_path / "glm.json"
    res = here("run", "abggmu-glm", "--problem", "logistic", "--n", "2000", "--d", "3", "--epsilon", "1", "--delta", "1e-6",
              "--set", "rank=2", "--set", "L1=0.25", "--seed", "0", "--quiet", "--out", str(out))
    assert res.returncode == 0, res.stderr
    plan = json.loads(out.read_text())["plan"]
    assert plan["params"]["record"] == "GLMParams" and plan["params"]["inner"]["record"] == "SpiderParams"
    assert {"T", "q", "b1", "b2", "eta", "z", "L0", "L1"} <= set(plan["params"]["inner"]) and "extra" not in plan
    bad = here("run", "dp-sgd", "--problem", "robust-regression", "--n", "2000", "--d", "3", "--epsilon", "1", "--delta", "1e-6",
              "--set", "B2=64", "--dry-run")
    assert bad.returncode != 0 and "DPSGDParams: T, batch, eta, C, sigma, sampling" in bad.stderr + bad.stdout


def test_the_privacy_block_documents_its_events_and_prices_add_remove():
    "Each event field is explained in `event_fields`; `epsilon_add_remove` prices the same releases for add/remove neighbours, below the guarantee."
    from dpnotebooks.planning.request import run_algorithm
    from dpnotebooks.privacy.ledger import Ledger
    for alg in ("dp-sgd", "abggmu-spider"):
        pr = run_algorithm(alg, "logistic", 2000, 4, 1.0, 1e-5, seed=0)["privacy"]
        assert {k for e in pr["events"] for k in e} == set(pr["event_fields"]) and "add/remove" in pr["add_remove_note"]
        assert 0 < pr["epsilon_add_remove"] < pr["epsilon_spent"] <= 1.0 + 1e-9
        assert pr["epsilon_add_remove"] == Ledger.from_dicts(pr["events"]).spent_add_remove(1e-5)


def test_the_mlp_problem_runs_from_the_command_line(tmp_path, capsys):
    from dpnotebooks.interface.cli import main
    "`--problem mlp --hidden H` (or H1,H2): the built-in MLP on bundled, file or synthetic data, priced and held out as any problem."
    out = tmp_path / "r.json"
    base = ["run", "dp-sgd", "--problem", "mlp", "--epsilon", "1", "--delta", "1e-5", "--seed", "0", "--quiet", "--out", str(out)]
    assert main(base + ["--hidden", "16", "--data", "breast-cancer", "--test-fraction", "0.3"]) == 0
    r = json.loads(out.read_text()); assert r["problem"] == "mlp" and r["d"] == 30 * 16 + 2 * 16 + 1 and r["evaluation"]["accuracy_out"] > 0.85   # 0.936 measured
    assert main(base + ["--n", "1000", "--d", "4"]) == 0 and json.loads(out.read_text())["d"] == 4 * 32 + 2 * 32 + 1
    assert main(["run", "dp-sgd", "--problem", "mlp", "--hidden", "8", "--n", "1000", "--d", "4", "--epsilon", "1", "--delta", "1e-5", "--dry-run"]) == 0
    capsys.readouterr()
    assert main(base + ["--hidden", "16,8", "--data", "digits", "--classes", ",".join(map(str, range(10))), "--test-fraction", "0.3", "--epsilon", "4"]) == 0
    r = json.loads(out.read_text()); assert r["d"] == 64 * 16 + 16 + 16 * 8 + 8 + 8 * 10 + 10 and r["evaluation"]["accuracy_out"] > 0.6   # 0.770 measured
    with pytest.raises(SystemExit): main(base + ["--hidden", "64,0"])
    assert "positive" in capsys.readouterr().err
    assert main(["run", "dp-sgd", "--problem", "logistic", "--hidden", "8", "--epsilon", "1", "--delta", "1e-5", "--quiet"]) == 2
    assert "--hidden sizes --problem mlp" in capsys.readouterr().err
