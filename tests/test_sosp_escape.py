"""`dpnb experiment sosp-escape` (nbs/experiments/62_sosp_escape): quick grid end to end, its files, reproducibility with --seed, and --list."""
import csv, json
import pytest
from dpnotebooks.interface.cli import main

def _run(out, seed):
    assert main(["experiment", "sosp-escape", "--quick", "--seed", str(seed), "--quiet", "--out", str(out)]) == 0
    return json.loads((out / "sosp_escape.json").read_text())

@pytest.mark.slow
def test_quick_grid_files_and_reproducibility(tmp_path):
    res = _run(tmp_path / "a", 5)
    for ext in ("json", "csv", "png", "svg"): assert (tmp_path / "a" / f"sosp_escape.{ext}").stat().st_size > 0, ext
    rows = res["rows"]
    modes = [r["mode"] for r in rows]
    assert modes.count("private") == 2 and modes.count("non-private") == 2 and [r["seed"] for r in rows][:2] == [5, 5]
    assert modes.count("ganesh-sosp") == 2                                  # LT's predecessor beside it, same ε and seeds
    thr, alpha = res["settings"]["lambda_threshold"], res["settings"]["alpha"]
    for r in rows:
        if r["mode"] in ("private", "non-private", "ganesh-sosp"):
            assert r["certified"] and r["sosp"] and r["grad"] <= alpha and r["lambda_min"] >= thr and r["samples_used"] <= res["settings"]["n"]
    off = next(r for r in rows if r["mode"] == "noiseless, escape off")
    assert not off["sosp"] and off["lambda_min"] < thr                       # the control stays at the saddle
    with open(tmp_path / "a" / "sosp_escape.csv") as f: table = list(csv.DictReader(f))
    assert len(table) == len(rows) and table[0]["escapes"] == "+".join(rows[0]["escapes"])
    again = _run(tmp_path / "b", 5)
    assert again["rows"] == rows                                             # seeded: the same numbers

def test_list_and_missing_name(capsys):
    assert main(["experiment", "--list"]) == 0
    out = capsys.readouterr().out
    for name in ("sample-complexity", "stationarity-rates", "sosp-escape"): assert name in out
    assert main(["experiment"]) == 2
    assert main(["experiment", "sosp-escape", "--seed", "-1"]) == 2           # a clear error, exit 2

@pytest.mark.slow
def test_dask_workers_and_resume(tmp_path, capsys):
    "Two local Dask workers give the serial grid's numbers; a second call on the same --out resumes every finished run."
    serial = _run(tmp_path / "s", 3)
    args = ["experiment", "sosp-escape", "--quick", "--seed", "3", "--quiet", "--out", str(tmp_path / "p")]
    assert main(args + ["--jobs", "2"]) == 0
    par = json.loads((tmp_path / "p" / "sosp_escape.json").read_text())
    assert par["rows"] == serial["rows"] and par["resumed_runs"] == 0
    capsys.readouterr()
    assert main(args) == 0
    assert "resumed 6 finished runs" in capsys.readouterr().out              # lt-sosp, its non-private twin, ganesh-sosp; 2 seeds
    assert json.loads((tmp_path / "p" / "sosp_escape.json").read_text())["rows"] == serial["rows"]
