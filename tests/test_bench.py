"""`dpnb bench --quick` (nbs/experiments/80_bench): runs on CPU, writes its JSON and BENCHMARKS.md-style tables; numbers are read, never asserted."""
import json
from pathlib import Path
import pytest
from dpnotebooks.interface.cli import main
from dpnotebooks.planning.catalog import ALGORITHMS
from dpnotebooks.core import backend as B

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
    assert {r["problem"] for r in res["rows"] if r["kernel"] == "zo-estimator"} == {"robust-regression", "robust-regression (margins)", "relu-net",
                                                                                  "robust-regression (increment)", "relu-net (increment)"}
    assert all(r["work"] for r in res["rows"] if "ratio" in r)           # every row with a ratio states its unavoidable work
    assert {r["problem"] for r in res["rows"] if r["kernel"] == "fo-grad"} == {"relu-net", "mlp 30-32-1 (fused clipped sum)"}
    text = md.read_text()
    assert text.startswith("# Benchmarks") and "Written by `dpnb bench --quick --backend numpy`" in text
    for head in ("## Zeroth-order estimator step", "## Tree mechanism step", "## First-order per-sample gradients", "## End to end"):
        assert head in text
    assert res["machine"]["cores"] >= 1 and "cpu" in res["machine"]
    assert "## Zeroth-order" in capsys.readouterr().out

def test_default_output_goes_to_its_own_directory(tmp_path, monkeypatch):
    "Without --out/--markdown the files go to dpnb-bench/ (or --output-dir), never over ./BENCHMARKS.md; --markdown FILE is an explicit ask."
    from dpnotebooks.experiments import bench
    monkeypatch.chdir(tmp_path)
    (tmp_path / "BENCHMARKS.md").write_text("tracked")
    fake = dict(machine=dict(cpu="x"), grid="quick", dtype="float64", rows=[])
    monkeypatch.setattr(bench, "run_suite", lambda **kw: fake)
    assert main(["bench", "--quick", "--quiet", "--backend", "numpy"]) == 0
    assert (tmp_path / "BENCHMARKS.md").read_text() == "tracked"
    assert (tmp_path / "dpnb-bench" / "BENCHMARKS.md").read_text().startswith("# Benchmarks") and (tmp_path / "dpnb-bench" / "bench.json").exists()
    assert main(["bench", "--quick", "--quiet", "--backend", "numpy", "--output-dir", "elsewhere"]) == 0
    assert (tmp_path / "elsewhere" / "bench.json").exists() and (tmp_path / "BENCHMARKS.md").read_text() == "tracked"
    assert main(["bench", "--quick", "--quiet", "--backend", "numpy", "--markdown", "BENCHMARKS.md"]) == 0
    assert (tmp_path / "BENCHMARKS.md").read_text().startswith("# Benchmarks")

def test_bad_arguments_are_named(capsys):
    if "cupy" not in B.available_backends():
        assert main(["bench", "--quick", "--quiet", "--backend", "cupy", "--markdown", ""]) == 2
        assert "cupy" in capsys.readouterr().err
    assert main(["bench", "--quick", "--quiet", "--backend", "numpy", "--algorithms", "nonsense", "--markdown", ""]) == 2
    assert "Unknown algorithm 'nonsense'" in capsys.readouterr().err

def test_markdown_compares_backends_on_the_same_shapes():
    "With rows from both backends, BENCHMARKS.md gets the numpy-against-cupy table (built here from made-up rows: no GPU needed)."
    from dpnotebooks.experiments.bench import benchmarks_markdown
    t = lambda s: dict(median=s, q25=s, q75=s, min=s, max=s, repeat=3)
    row = lambda be, s: dict(kernel="zo-estimator", problem="robust-regression", d=4096, m=4096, b=64, step=t(s), unavoidable=t(s / 2), ratio=2.0, backend=be, dtype="float64")
    md = benchmarks_markdown(dict(machine=dict(cpu="x", gpu="y"), grid="full", dtype="float64", rows=[row("numpy", 2.0), row("cupy", 0.1)]))
    assert "## numpy against cupy (same shapes)" in md and "| 2e+03 | 100 | 20.0 |" in md

ROOT = Path(__file__).resolve().parents[1]

def _peer():
    "benchmarks/peer_opacus.py as a module (importing it leaves this process's environment alone)."
    import importlib.util
    spec = importlib.util.spec_from_file_location("peer_opacus", ROOT / "benchmarks" / "peer_opacus.py")
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    return mod

@pytest.mark.slow
def test_peer_benchmark_unsets_the_openblas_overrides_and_names_the_machine(tmp_path):
    "The script removes OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE before numpy loads, says so, names the BLAS kernel, and says no GPU was measured."
    import os, subprocess, sys
    env = dict(os.environ, OPENBLAS_CORETYPE="Haswell", OPENBLAS_L2_SIZE="262144")
    out = tmp_path / "peer.md"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "peer_opacus.py"), "--quick", "--skip", "epoch,grad,e2e,models", "--out", str(out)],
                   env=env, check=True, capture_output=True, cwd=tmp_path)
    text = out.read_text()
    assert "| unset | OPENBLAS_CORETYPE, OPENBLAS_L2_SIZE |" in text and "| blas_kernel |" in text and "| threads | 2 |" in text
    assert "no GPU was available" in text

@pytest.mark.slow
def test_peer_benchmark_times_a_users_torch_models_against_both_opacus_modes():
    "The models section: the MLP and the CNN at one batch size, Opacus hooks and ghost and from_torch in one row, the ratio and the path named."
    pytest.importorskip("opacus", reason="the peer benchmark needs Opacus: pip install 'dpnotebooks[bench]'")
    peer = _peer(); peer.MODEL_STEPS = 3
    rows = [l for l in peer.model_table([64], repeat=1) if l.startswith("| mlp") or l.startswith("| cnn")]
    assert len(rows) == 2 and all("(ghost: 3 layers)" in r and "× (" in r for r in rows), rows

@pytest.mark.slow
def test_peer_benchmark_times_both_libraries_in_one_table():
    "One epoch on breast-cancer at B = 64, both libraries interleaved, the ratio in the row (needs the [bench] extra)."
    pytest.importorskip("opacus", reason="the peer benchmark needs Opacus: pip install 'dpnotebooks[bench]'")
    peer = _peer()
    from dpnotebooks.experiments.utility import utility_task
    lines = peer.epoch_table([utility_task("breast-cancer")], [64, 1024], repeat=1)
    rows = [l for l in lines if l.startswith("| breast-cancer")]
    assert len(rows) == 2 and rows[0].count("×") == 4 and "n/a: B > n" in rows[1]
    assert peer.poisson_epoch(398, 64) == (7, 57) and peer.poisson_epoch(398, 256) == (2, 199)

def test_peer_grad_rows_set_per_sample_gradients_beside_one_batched_gradient():
    "The per-sample-gradient rows of the built-in models carry both timings (the adapters' rows are left out here: building them takes seconds)."
    peer = _peer()
    from dpnotebooks.experiments.utility import utility_task
    task = utility_task("breast-cancer")
    rows = peer.grad_rows(task, 16, repeat=1, adapters=False)
    assert {r["model"] for r in rows} == {"MLP (built-in)", "logistic (built-in, linear)"} and all(r["each"] > 0 and r["batched"] > 0 for r in rows)
    assert all("fused" in r and len(r["fused_blocks"]) == 3 for r in rows if r["model"] == "MLP (built-in)")

def test_peer_block_ratios_give_the_spread_of_a_ratio_over_stretches_of_repeats():
    "A ratio of 2 in the first half of the repeats and 1 in the second: median over stretches between, min 1, max 2; one repeat is one stretch."
    peer = _peer()
    a, b = dict(times=[2.0] * 50 + [1.0] * 50), dict(times=[1.0] * 100)
    assert peer.block_ratios(a, b) == (1.5, 1.0, 2.0)
    assert peer.block_ratios(dict(times=[3.0]), dict(times=[1.5])) == (2.0, 2.0, 2.0)

@pytest.mark.slow
def test_gpu_benchmarks_measure_no_gpu_figure_without_a_gpu(tmp_path):
    "benchmarks/gpu.py on small shapes: numpy rows only where no GPU is usable, each GPU section named as skipped; --device cuda refuses clearly."
    import subprocess, sys
    from dpnotebooks.core.backend import available_backends
    if "cupy" in available_backends(): pytest.skip("a GPU is usable here: benchmarks/gpu.py measures it (see benchmarks/gpu_results.md)")
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu.py"), "--quick", "--repeat", "1", "--sections", "zo,gemm,torch", "--out", str(tmp_path)],
                         capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    md = (tmp_path / "gpu.md").read_text()
    assert "| robust-regression | numpy | float64 |" in md and "| cupy |" not in md and "cupy rows skipped: no usable CUDA GPU" in md
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "peer_opacus.py"), "--device", "cuda", "--quick", "--out", str(tmp_path / "p.md")],
                         capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode != 0 and "--device cuda needs a CUDA GPU with cupy" in res.stderr and not (tmp_path / "p.md").exists()

def test_linear_clip_rule_stays_between_the_declared_clip_and_L():
    "benchmarks/linear_clip_rule.py's rejected rule C = min(L, max(declared, κ·L/r)): the declared clip at κ = 0 or much noise, L with little, growing with ε."
    import importlib.util
    from dpnotebooks.problems.base import Logistic
    spec = importlib.util.spec_from_file_location("linear_clip_rule", ROOT / "benchmarks" / "linear_clip_rule.py")
    rule = importlib.util.module_from_spec(spec); spec.loader.exec_module(rule)
    lg = Logistic(Logistic.synthetic(2000, 5, seed=0))
    clips = [rule.clip_at(lg, e, 0.03) for e in (0.5, 2.0, 8.0)]
    assert clips[0] == lg.dpsgd_clip and clips[-1] == lg.L, clips                    # d = 5: r ≈ 0.3 at ε = 0.5, below 0.03 at ε = 8
    assert lg.dpsgd_clip < clips[1] < lg.L, clips                                     # κ·L/r in between
    assert rule.clip_at(lg, 8.0, 0.0) == lg.dpsgd_clip

def test_mlp_step_rule_alternatives_change_one_part_of_the_declared_rule():
    "benchmarks/mlp_step_rule.py rules: each alternative moves only its own part of the MLP's declared DP-SGD plan (batch, distance R or passes)."
    import importlib.util, math, warnings
    from dpnotebooks.algorithms.deep_mlp import make_mlp
    from dpnotebooks.planning.minimize import plan_run
    from dpnotebooks.problems.base import Logistic
    spec = importlib.util.spec_from_file_location("mlp_step_rule", ROOT / "benchmarks" / "mlp_step_rule.py")
    rule = importlib.util.module_from_spec(spec); spec.loader.exec_module(rule)
    m = make_mlp(Logistic.synthetic(1250, 8, seed=0), 16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plans = {name: plan_run(m, "dp-sgd", 8.0, 1e-5, **over(m)).params for name, over in rule.ALTERNATIVES.items()}
    base = plans["declared"]; assert (base.batch, base.T) == (round(3 * math.sqrt(1250)), 30 * (1250 // base.batch)), base
    assert plans["B = 2√n"].batch == round(2 * math.sqrt(1250)) and plans["B = 64"].batch == 64
    assert (plans["min(45, n/25) passes"].batch, plans["min(45, n/25) passes"].T) == (base.batch, 45 * (1250 // base.batch))
    for name, c in (("R = 1.5·p", 1.5), ("R = 1.0·p", 1.0)):
        p = plans[name]; assert (p.batch, p.T, p.sigma) == (base.batch, base.T, base.sigma)
        assert math.isclose(p.eta, base.eta * c / 1.25, rel_tol=1e-9), (name, p.eta, base.eta)

def test_utility_target_floor_selects_on_seeds_0_to_9_and_rescores_on_fresh_ones(monkeypatch):
    "benchmarks/utility_target_floor.py: the best configuration is picked on the selection seeds; its fresh re-run and the defaults are scored against it."
    import importlib.util
    spec = importlib.util.spec_from_file_location("utility_target_floor", ROOT / "benchmarks" / "utility_target_floor.py")
    floor = importlib.util.module_from_spec(spec); spec.loader.exec_module(floor)
    top = "reference:lr=2,C=1,epochs=30"
    def fake(job):
        task, model, eps, seed, method = job
        if method == "dp-sgd": return 0.9 if seed < 10 else 0.7           # the defaults: above the best, then far below it
        if method == top: return 0.8 + (0.01 if seed % 2 else -0.01) - (0.003 if seed >= 10 else 0)   # a fresh mean 0.3 SE low
        return 0.5 + 0.001 * seed
    class Serial:
        def map(self, f, jobs, chunksize=1): return map(f, jobs)
    monkeypatch.setattr(floor, "accuracy_of", fake)
    rows = floor.floor(Serial())
    assert len(rows) == 32 and all(r["best"] == top for r in rows.values())
    assert all(r["fresh_meets"] and r["defaults_meet"] and not r["defaults_fresh_meet"] for r in rows.values())
    monkeypatch.setattr(floor, "accuracy_of", lambda j: fake(j) - (0.01 if j[4] == top and j[3] >= 10 else 0))   # 3 SE low: a miss
    assert not any(r["fresh_meets"] for r in floor.floor(Serial()).values())

def test_clip_calibration_the_declared_clip_is_overconfident_on_the_weak_table(tmp_path):
    "benchmarks/clip_calibration.py: on its weak-signal table the declared clip L/10 gives a held-out log-loss above log 2; the clip L about scikit-learn's (0.60), at the same accuracy."
    import importlib.util, math
    spec = importlib.util.spec_from_file_location("clip_calibration", ROOT / "benchmarks" / "clip_calibration.py")
    cal = importlib.util.module_from_spec(spec); spec.loader.exec_module(cal)
    args = cal.tasks(tmp_path)["weak table"]
    (l1, a1), (lL, aL) = (cal.private(args, C, 0, tmp_path / "r.json") for C in (0.1, 1.0))
    assert l1 > math.log(2) > 0.65 > lL and abs(a1 - aL) < 0.03, (l1, a1, lL, aL)     # seed 0: log-loss 0.819 against 0.600, accuracy 0.687 against 0.692
