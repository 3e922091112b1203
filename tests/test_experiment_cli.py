"""`dpnb experiment NAME --quick --seed S` for the sample-complexity and stationarity-rates experiments: JSON, CSV, PNG and SVG, seeds from S."""
import csv, json
import pytest
from dpnotebooks.cli import main

def _files(out, stem):
    for ext in ("json", "csv", "png", "svg"): assert (out / f"{stem}.{ext}").stat().st_size > 0, ext
    with open(out / f"{stem}.csv") as f: table = list(csv.DictReader(f))
    return json.loads((out / f"{stem}.json").read_text()), table

def test_sample_complexity_quick(tmp_path):
    assert main(["experiment", "sample-complexity", "--quick", "--seed", "3", "--quiet", "--out", str(tmp_path)]) == 0
    res, table = _files(tmp_path, "sample_complexity")
    assert res["config"]["seeds"] == [3, 4] and res["config"]["ds"] == [4, 8]
    assert len(table) == len(res["smallest"]) and {r["algorithm"] for r in table} == {"ztc-naive", "klt-single-pass"}

@pytest.mark.slow
def test_stationarity_rates_quick(tmp_path):
    assert main(["experiment", "stationarity-rates", "--quick", "--seed", "2", "--quiet", "--out", str(tmp_path)]) == 0
    res, table = _files(tmp_path, "stationarity_rates")
    assert res["config"]["base_seed"] == 2 and res["config"]["seeds"] == 2 and res["config"]["ns"] == [2000, 6000, 18000]
    assert len(table) == len(res["points"]) == 9 and all(float(r["epsilon_spent"]) <= 1 + 1e-6 for r in table)
