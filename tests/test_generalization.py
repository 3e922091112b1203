"""KLT Prop. 5.1's experiment (`dpnb experiment generalization`, nbs/experiments/64_generalization.ipynb) at tiny sizes: the
result's structure and labels, every run within its budget, the proof's triangle inequality on every run, seeded runs
reproduced, held-out samples disjoint from the training sample, and (slow tier) the CLI's --quick run writing its JSON."""
import json
import numpy as np
import pytest
from dpnotebooks.core.backend import to_numpy
from dpnotebooks.experiments.sample_complexity import planted_robust_regression
from dpnotebooks.experiments.generalization import (generalization_experiment, score_generalization_run, format_generalization, held_out,
                                        prop51_term, GEN_SETTINGS)
from dpnotebooks.interface.cli import main

TINY = dict(ns=(300, 600), ds=(2, 3), seeds=2, pop_n=6000, reps=2, k=32, progress=False, max_steps=100)

@pytest.fixture(scope="module")
def tiny():
    return json.loads(json.dumps(generalization_experiment(**TINY)))     # what the CLI writes: plain JSON

def test_structure_and_labels(tiny):
    c = tiny["config"]
    assert (c["ns"], c["ds"], c["seeds"], c["epsilons"], c["radius"]) == ([300, 600], [2, 3], [0, 1], [8.0], 0.04)
    assert c["algorithm"] == "klt-multi-pass" and c["settings"] == {**GEN_SETTINGS, "max_steps": 100}
    assert [(p["d"], p["n"]) for p in tiny["points"]] == [(d, n) for d in (2, 3) for n in (300, 600)]
    assert "not private data" in tiny["evaluation"] and "NOT private" in tiny["evaluation"]
    for p in tiny["points"]:
        assert p["refused"] == 0 and len(p["runs"]) == 2 and p["gap_se"] is not None
        assert p["bound"] == pytest.approx(prop51_term(p["n"], p["d"], 1.0, p["runs"][0]["R"], 0.05))
        for r in p["runs"]:
            assert set(k for k in r if "empirical" in k) <= {k for k in r if k.startswith("nonprivate_")}   # private-data numbers are labelled
            assert r["population_low"] <= r["population"] <= r["population_high"]
            assert r["gap"] == pytest.approx(r["population"] - r["nonprivate_empirical"])
    assert {s["d"] for s in tiny["slopes"]} == {2, 3} and set(tiny["population_x0"]) == {"2", "3"}
    assert "NON-PRIVATE" in format_generalization(tiny)

def test_budget_and_proof_step(tiny):
    "Every run spends at most its epsilon; the proof's step ||Σλ∇F(y)|| ≤ ||Σλ∇F̂(y)|| + max||∇F − ∇F̂|| holds on every run."
    for p in tiny["points"]:
        for r in p["runs"]:
            assert r["epsilon_spent"] <= p["epsilon"] + 1e-9
            assert r["transfer"] <= r["nonprivate_empirical_cert"] + r["uniform_deviation"] + 1e-12

def test_seeded_run_reproduced(tiny):
    r = score_generalization_run(300, 2, 8.0, 1e-5, 0.02, seed=1, pop_n=6000, reps=2, k=32, max_steps=100)
    saved = tiny["points"][0]["runs"][1]
    assert {k: v for k, v in r.items() if k != "seconds"} == {k: v for k, v in saved.items() if k != "seconds"}

def test_held_out_is_fresh():
    "The held-out samples of seed s are not the training sample of any seed the grid uses, nor each other."
    A = lambda p: to_numpy(p.data.A)
    train = [A(planted_robust_regression(300, 3, seed=s)) for s in range(3)]
    outs = [A(held_out(300, 3, s, r, 2)) for s in range(3) for r in range(2)]
    for i, h in enumerate(outs):
        assert not any(np.allclose(h, t) for t in train) and not any(np.allclose(h, o) for o in outs[:i])

def test_bad_input_refused():
    with pytest.raises(ValueError, match="at least 10 times the largest n"): generalization_experiment(ns=(300, 600), ds=(2,), pop_n=1000)
    with pytest.raises(ValueError, match="`reps` must be at least 2"): generalization_experiment(ns=(300, 600), ds=(2,), reps=1)

@pytest.mark.slow
def test_cli_quick(tmp_path):
    "`dpnb experiment generalization --quick` (about 10 s): JSON, CSV, PNG and SVG."
    assert main(["experiment", "generalization", "--quick", "--quiet", "--out", str(tmp_path)]) == 0
    res = json.loads((tmp_path / "generalization.json").read_text())
    assert res["config"]["ns"] == [250, 1000] and res["config"]["ds"] == [4, 8] and len(res["points"]) == 4
    assert all(p["refused"] == 0 and p["epsilon_spent"] <= 8.0 + 1e-9 for p in res["points"])
    for ext in ("csv", "png", "svg"): assert (tmp_path / f"generalization.{ext}").stat().st_size > 0
