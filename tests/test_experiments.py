"""End to end: the sample-complexity experiment (60_sample_complexity) and `dpnb experiment sample-complexity`."""
import json, math
from concurrent.futures import ProcessPoolExecutor
import pytest
from dpnotebooks.experiments.sample_complexity import (sample_complexity_experiment, format_sample_complexity, plot_sample_complexity, smallest_n,
                                     geometric_grid, klt_m_rule)
from dpnotebooks.interface.cli import main


@pytest.mark.slow
def test_tiny_experiment_end_to_end(tmp_path):
    res = sample_complexity_experiment(ds=(4, 8), epsilons=(2.0,), algorithms=("klt-single-pass", "ztc-naive"), seeds=2,
                                       n_min=1000, n_max=64000, accuracy_epsilons=(2.0, 8.0), d_fixed=4)   # in this process: a Dask
    # cluster gives the same runs (tests/test_experiment_cli.py::test_dask_cluster_and_resume); two more processes on CI's two
    # busy cores took 57 s there, and 39 s against 34 s in one process on an idle machine
    back = json.loads(json.dumps(res))                                   # plain JSON, round trip
    assert back["config"]["ds"] == [4, 8] and back["config"]["overrides"]["klt-single-pass"]["8"] == klt_m_rule(8)
    assert all(r["goldstein_x0"] > 1.5 * back["config"]["beta"] for r in back["goldstein_x0"])
    for p in back["smallest"]:
        assert p["n"] is not None and p["n_lower"] is not None and p["n_lower"] < p["n"]
        at = {r["n"]: r for r in p["runs"]}
        assert at[p["n"]]["success_rate"] > 0.5 >= at[p["n_lower"]]["success_rate"]    # the bracket is what it says
        assert all(r["epsilon_spent"] <= 2.0 + 1e-9 and r["clipped_fraction"] < 0.01 for r in p["runs"])
    for s in back["slopes"]:
        assert s["slope"] is not None and s["se"] >= 0 and not s["censored"]
        lo, hi = s["theory_range"]; assert lo <= s["theory_slope"] <= hi
    for acc in back["accuracy"]:
        assert acc["d"] == 4 and len(acc["n"]) == len(acc["median_goldstein"]) and acc["epsilon_spent"] <= acc["epsilon"] + 1e-9
    assert "slope ± SE" in format_sample_complexity(back)
    plot_sample_complexity(back, tmp_path / "p.png"); assert (tmp_path / "p.png").stat().st_size > 1000


@pytest.mark.slow
def test_parallel_seeds_match_serial_and_walk_down():
    kw = dict(algorithm="ztc-naive", d=4, epsilon=4.0, delta=1e-5, alpha=0.1, beta=0.3, seeds=3, n_grid=geometric_grid(16000, 64000))
    serial = smallest_n(**kw)
    with ProcessPoolExecutor(2) as ex: parallel = smallest_n(**kw, executor=ex)
    assert [r["goldstein"] for r in serial["runs"]] == [r["goldstein"] for r in parallel["runs"]]
    assert serial["n"] == parallel["n"] and serial["n"] < 16000 and serial["n_lower"] is not None   # walked below the grid


@pytest.mark.slow
def test_cli_experiment(tmp_path):
    out = tmp_path / "sc"
    assert main(["experiment", "sample-complexity", "--ds", "4,8", "--epsilons", "4", "--accuracy-epsilons", "4", "--algorithms",
                 "ztc-naive", "--seeds", "2", "--n-min", "2000", "--n-max", "32000", "--quiet", "--out", str(out)]) == 0
    r = json.loads((out / "sample_complexity.json").read_text())
    assert (out / "sample_complexity.png").stat().st_size > 1000
    assert [p["d"] for p in r["smallest"]] == [4, 8] and r["slopes"][0]["slope"] is not None and math.isfinite(r["slopes"][0]["se"])
    assert main(["experiment", "sample-complexity", "--beta", "0", "--quiet", "--out", str(out)]) == 2
