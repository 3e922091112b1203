"""`dpnb experiment utility`'s experiment on a tiny grid (wine, two epsilons, two seeds): the result's structure, every run's
epsilon spent within its budget (the tuned runs' selection included), and a held-out split disjoint from the training split."""
import json
import numpy as np
import pytest
from dpnotebooks.core.backend import to_numpy
from dpnotebooks.problems.dataset import Dataset
from dpnotebooks.problems.data import public_scaler
from dpnotebooks.experiments.utility import utility_experiment, utility_task, format_utility, UTILITY_DATASETS, _raw

@pytest.fixture(scope="module")
def tiny():
    res = utility_experiment(["wine"], [0.5, 4.0], algorithms=["dp-sgd", "abggmu-tree-spider"], seeds=2, mlp=True, tuned=True, progress=False)
    return json.loads(json.dumps(res))          # what the CLI writes: plain JSON

@pytest.mark.slow
def test_structure(tiny):
    c = tiny["config"]
    assert c["series"] == ["dp-sgd", "abggmu-tree-spider", "dp-sgd-tuned", "dp-sgd (mlp)"] and c["seeds"] == 2 and c["delta"] == 1e-5
    assert [(p["series"], p["epsilon"]) for p in tiny["points"]] == [(s, e) for s in c["series"] for e in (0.5, 4.0)]
    for p in tiny["points"]:
        assert len(p["runs"]) == 2 and p["refused"] == 0 and 0 <= p["accuracy"] <= 1 and p["accuracy_se"] >= 0
    assert {(b["dataset"], b["epsilon"]) for b in tiny["best"]} == {("wine", 0.5), ("wine", 4.0)}
    assert tiny["datasets"]["wine"]["n_train"] == 125 and 0.9 <= tiny["datasets"]["wine"]["reference"] <= 1
    assert tiny["targets"] is None                                   # the targets are breast-cancer's
    tuned = [r for p in tiny["points"] if p["series"] == "dp-sgd-tuned" for r in p["runs"]]
    plain = [r for p in tiny["points"] if p["series"] == "dp-sgd" for r in p["runs"]]
    assert all(r["hyperparameters"] == {} for r in tuned)          # at n = 125 `tune`'s verdict says no: the defaults ran instead
    assert [r["accuracy"] for r in tuned] == [r["accuracy"] for r in plain]
    assert "non-private reference" in format_utility(tiny)

@pytest.mark.slow
def test_epsilon_spent_within_budget(tiny):
    for p in tiny["points"]:
        assert p["epsilon_spent"] <= p["epsilon"] + 1e-9
        assert all(r["epsilon_spent"] <= p["epsilon"] + 1e-9 for r in p["runs"])

@pytest.mark.parametrize("name", list(UTILITY_DATASETS))
def test_held_out_disjoint_from_training(name):
    "The two sides' row numbers are disjoint and cover the data, and each side's records are exactly those rows, scaled."
    t = utility_task(name); n = len(t.train) + len(t.test)
    assert set(t.train_rows.tolist()).isdisjoint(t.test_rows.tolist()) and sorted([*t.train_rows, *t.test_rows]) == list(range(n))
    assert len(t.test) == round(0.3 * n)
    X, _, center, scale = _raw(name); sc = public_scaler(center, scale)
    for side, rows in ((t.train, t.train_rows), (t.test, t.test_rows)):
        np.testing.assert_allclose(to_numpy(sc(Dataset(X[rows], np.zeros(len(rows)))).A), to_numpy(side.A), rtol=0, atol=1e-12)


def test_the_reference_series_and_the_new_tasks():
    "`reference=True` adds DP-SGD in `REFERENCE` and its grid on each model, and their targets; digits-10 is softmax, tabular one-hot."
    from dpnotebooks.experiments.utility import reference_config, reference_methods, REFERENCE, utility_task, utility_problem
    assert reference_config("reference") == REFERENCE and reference_config("reference:lr=2,C=0.1,epochs=30")["epochs"] == 30
    assert type(utility_problem("digits-10")).__name__ == "Multinomial" and utility_task("tabular").train.p == 9
    res = utility_experiment(["tabular"], [1.0], algorithms=["dp-sgd"], seeds=1, mlp=False, tuned=False, reference=True, progress=False)
    assert len(res["points"]) == 1 + len(reference_methods())
    (t,) = res["reference"]["targets"]
    assert t["model"] == "logistic" and t["reference_best"] >= t["reference"] and t["beats_reference"] == (t["defaults"] >= t["reference"])
    assert all(r["epsilon_spent"] <= 1.0 + 1e-9 for p in res["points"] for r in p["runs"] if r is not None)
