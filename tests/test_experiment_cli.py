"""`dpnb experiment NAME --seed S` for the sample-complexity and stationarity-rates experiments (--quick and smaller grids): JSON, CSV, PNG and SVG, seeds from S."""
import csv, json
import pytest
from dpnotebooks.interface.cli import main

def _files(out, stem):
    for ext in ("json", "csv", "png", "svg"): assert (out / f"{stem}.{ext}").stat().st_size > 0, ext
    with open(out / f"{stem}.csv") as f: table = list(csv.DictReader(f))
    return json.loads((out / f"{stem}.json").read_text()), table

def test_sample_complexity_quick_preset():
    "--quick sets its small grid whatever else was given (60_sample_complexity's slow cells run a larger one and check its results)."
    from dpnotebooks.interface.cli import build_parser
    from dpnotebooks.interface.experiment_cli import _experiment_args
    args = build_parser().parse_args(["experiment", "sample-complexity", "--quick", "--ds", "64", "--seeds", "9"])
    _experiment_args(args)
    assert args.ds == [4, 8] and args.seeds == 2 and args.algorithms == ["ztc-naive", "klt-single-pass"] and args.n_max == 32000

@pytest.mark.slow
def test_sample_complexity_cli_seeds(tmp_path):
    "The CLI's files, on a grid smaller than --quick's, with seeds counted from --seed."
    assert main(["experiment", "sample-complexity", *TINY, "--seed", "3", "--quiet", "--out", str(tmp_path)]) == 0
    res, table = _files(tmp_path, "sample_complexity")
    assert res["config"]["seeds"] == [3, 4] and res["config"]["ds"] == [4, 8]
    assert len(table) == len(res["smallest"]) == 2 and {r["algorithm"] for r in table} == {"ztc-naive"}

def test_stationarity_rates_quick_preset():
    "--quick sets the grid 61_stationarity_rates runs in its slow cells (which check the experiment's results), whatever else was given."
    from dpnotebooks.interface.cli import build_parser
    from dpnotebooks.interface.experiment_cli import _experiment_args
    args = build_parser().parse_args(["experiment", "stationarity-rates", "--quick", "--ns", "500", "--seeds", "9"])
    _experiment_args(args)
    assert args.ns == [2000, 6000, 18000] and args.seeds == 2 and args.epsilon == 1.0 and args.d == 10

@pytest.mark.slow
def test_stationarity_rates_cli(tmp_path):
    "The CLI's files for a grid smaller than --quick's (the same code path; the notebook runs the --quick grid)."
    assert main(["experiment", "stationarity-rates", "--ns", "2000,6000", "--seeds", "1", "--seed", "2", "--quiet", "--out", str(tmp_path)]) == 0
    res, table = _files(tmp_path, "stationarity_rates")
    assert res["config"]["base_seed"] == 2 and res["config"]["seeds"] == 1 and res["config"]["ns"] == [2000, 6000]
    assert len(table) == len(res["points"]) == 6 and all(float(r["epsilon_spent"]) <= 1 + 1e-6 for r in table)

def _parses(line):
    try: json.loads(line); return True
    except json.JSONDecodeError: return False

def _strip(res):
    "The grid's findings without timings."
    return [{k: v for k, v in p.items() if k != "runs"} | {"runs": [{k: v for k, v in r.items() if k != "seconds"} for r in p["runs"]]}
            for p in res["smallest"]]

TINY = ["--ds", "4,8", "--epsilons", "4", "--accuracy-epsilons", "4", "--algorithms", "ztc-naive", "--seeds", "2",
        "--n-min", "2000", "--n-max", "16000"]   # a grid smaller than --quick's: the Dask and resume mechanics, not the numbers

@pytest.mark.slow
def test_dask_cluster_and_resume(tmp_path):
    "A 2-worker Dask LocalCluster gives the runs of the in-process grid; a grid stopped half-way resumes and skips the finished runs."
    a, b = tmp_path / "local", tmp_path / "dask"
    assert main(["experiment", "sample-complexity", *TINY, "--quiet", "--out", str(a)]) == 0
    assert main(["experiment", "sample-complexity", *TINY, "--quiet", "--jobs", "2", "--out", str(b)]) == 0
    ra, rb = (json.loads((p / "sample_complexity.json").read_text()) for p in (a, b))
    assert _strip(ra) == _strip(rb) and ra["resumed_runs"] == 0
    lines = (a / "runs.jsonl").read_text().splitlines()
    assert len(lines) == len(set(lines)) > 4                                  # each finished run saved once
    half = len(lines) // 2                                                    # stop half-way, the last line cut short
    (a / "runs.jsonl").write_text("\n".join(lines[:half]) + "\n" + lines[half][: len(lines[half]) // 2])
    assert main(["experiment", "sample-complexity", *TINY, "--quiet", "--out", str(a)]) == 0
    rc = json.loads((a / "sample_complexity.json").read_text())
    assert rc["resumed_runs"] == half and _strip(rc) == _strip(ra)
    saved = (a / "runs.jsonl").read_text().splitlines()
    assert len(saved) == len(lines) + 1 and sum(1 for l in saved if _parses(l)) == len(lines)   # the cut line, then only the missing runs
    assert main(["experiment", "sample-complexity", *TINY, "--quiet", "--fresh", "--out", str(a)]) == 0
    assert json.loads((a / "sample_complexity.json").read_text())["resumed_runs"] == 0
