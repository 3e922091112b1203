"""`dpnb bench --quick` (nbs/experiments/80_bench): runs on CPU, writes its JSON and BENCHMARKS.md-style tables; numbers are read, never asserted."""
import json
import pytest
from dpnotebooks.cli import main
from dpnotebooks.minimize import ALGORITHMS
from dpnotebooks import backend as B

@pytest.mark.slow
def test_quick_suite_writes_json_and_markdown(tmp_path, capsys):
    out, md = tmp_path / "bench.json", tmp_path / "BENCHMARKS.md"
    assert main(["bench", "--quick", "--quiet", "--backend", "numpy", "--out", str(out), "--markdown", str(md)]) == 0
    res = json.loads(out.read_text())
    kernels = {r["kernel"] for r in res["rows"]}
    assert kernels == {"zo-estimator", "tree", "fo-grad", "end-to-end"}
    assert {r["algorithm"] for r in res["rows"] if r["kernel"] == "end-to-end"} == set(ALGORITHMS)
    for r in res["rows"]:
        if "step" in r:
            assert 0 < r["step"]["min"] <= r["step"]["median"] <= r["step"]["max"] and r["ratio"] > 0
        if r["kernel"] == "end-to-end": assert r["samples_used"] <= r["n"] and r["peak_bytes"] > 0
    assert {r["problem"] for r in res["rows"] if r["kernel"] == "zo-estimator"} == {"robust-regression", "robust-regression (margins)", "relu-net"}
    text = md.read_text()
    assert text.startswith("# Benchmarks") and "Written by `dpnb bench --quick --backend numpy`" in text
    for head in ("## Zeroth-order estimator step", "## Tree mechanism step", "## First-order per-sample gradients", "## End to end"):
        assert head in text
    assert res["machine"]["cores"] >= 1 and "cpu" in res["machine"]
    assert "## Zeroth-order" in capsys.readouterr().out

def test_bad_arguments_are_named(capsys):
    if "cupy" not in B.available_backends():
        assert main(["bench", "--quick", "--quiet", "--backend", "cupy", "--markdown", ""]) == 2
        assert "cupy" in capsys.readouterr().err
    assert main(["bench", "--quick", "--quiet", "--backend", "numpy", "--algorithms", "nonsense", "--markdown", ""]) == 2
    assert "Unknown algorithm 'nonsense'" in capsys.readouterr().err

def test_markdown_compares_backends_on_the_same_shapes():
    "With rows from both backends, BENCHMARKS.md gets the numpy-against-cupy table (built here from made-up rows: no GPU needed)."
    from dpnotebooks.bench import benchmarks_markdown
    t = lambda s: dict(median=s, q25=s, q75=s, min=s, max=s, repeat=3)
    row = lambda be, s: dict(kernel="zo-estimator", problem="robust-regression", d=4096, m=4096, b=64, step=t(s), unavoidable=t(s / 2), ratio=2.0, backend=be, dtype="float64")
    md = benchmarks_markdown(dict(machine=dict(cpu="x", gpu="y"), grid="full", dtype="float64", rows=[row("numpy", 2.0), row("cupy", 0.1)]))
    assert "## numpy against cupy (same shapes)" in md and "| 2e+03 | 100 | 20.0 |" in md
