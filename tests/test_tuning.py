"Private hyperparameter selection (nbs/planning/34_private_tuning): the selection's privacy, refusals, reproducibility."
import math
import numpy as np
import pytest
from dpnotebooks.problems.base import get_problem
from dpnotebooks.problems.dataset import with_data
from dpnotebooks.privacy.ledger import Ledger, Release, BudgetExceededError
from dpnotebooks.planning.tuning import (TUNING_ORDERS, selection_epsilon, ledger_rdp, tune, accuracy, tnb_gamma,
                                tnb_selection_rdp, SelectionLedger, plan_tuning, default_grid, tuning_verdict)
from dpnotebooks.planning.minimize import minimize
from conftest import untouchable

GRID = {"lr": [0.1, 0.5], "epochs": [2, 4]}
O = np.array(TUNING_ORDERS)

def _small(): return get_problem("logistic", n=300, d=5, seed=1)

@pytest.mark.parametrize("law", ["truncated-negative-binomial", "geometric", "poisson"])
def test_tuned_selection_spends_at_most_its_budget(law):
    r = tune(_small(), "dp-sgd", GRID, 1.0, 1e-5, mean_runs=3, distribution=law, sampling="shuffle", seed=0, when="always")
    assert r.epsilon_spent <= 1.0 and r.epsilon_spent > 0.95
    assert r.nonprivate is None and r.neighbouring == "replace-one"
    assert (r.hyperparameters in r.plan.points) or (law == "poisson" and r.x is None)

def test_seeded_selection_is_reproducible_and_diagnostics_do_not_change_it():
    a = tune(_small(), "dp-sgd", GRID, 2.0, 1e-5, mean_runs=4, sampling="shuffle", seed=7, when="always")
    b = tune(_small(), "dp-sgd", GRID, 2.0, 1e-5, mean_runs=4, sampling="shuffle", seed=7, diagnostics="nonprivate", when="always")
    assert np.array_equal(a.x, b.x) and a.hyperparameters == b.hyperparameters and a.score == b.score
    assert b.nonprivate["K"] == len(b.nonprivate["runs"]) >= 1

def test_impossible_budget_is_refused_before_reading_data():
    p = untouchable(_small())
    with pytest.raises(BudgetExceededError, match="no data was read"):
        tune(p, "dp-sgd", GRID, 0.01, 1e-5, mean_runs=10, sampling="shuffle", seed=0, when="always")
    with pytest.raises(ValueError, match="Unknown override"):
        tune(p, "dp-sgd", {"learning_rate": [1.0]}, 1.0, 1e-5, sampling="shuffle", seed=0, when="always")

@pytest.mark.parametrize("kw, msg", [(dict(distribution="uniform"), "`distribution` must be one of"), (dict(mean_runs=1.0), "mean_runs"),
                                     (dict(validation_fraction=1.0), "validation_fraction"), (dict(score="auc"), "'accuracy' or 'loss'"),
                                     (dict(diagnostics="all"), "diagnostics")])
def test_bad_requests_name_the_fix(kw, msg):
    with pytest.raises(ValueError, match=msg):
        tune(untouchable(_small()), "dp-sgd", {"lr": [0.1]}, 1.0, 1e-5, sampling="shuffle", **kw)

def test_bound_reduces_to_the_base_mechanism_and_grows_with_the_mean():
    rdp = 0.01 * O
    from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon
    base = compute_epsilon(O[1:], rdp[1:], 1e-6)[0]
    for law, eta in (("geometric", 1.0), ("truncated-negative-binomial", 0.0), ("truncated-negative-binomial", -0.5)):
        assert abs(selection_epsilon(rdp, O, 1e-6, law, 1 + 1e-10, eta) - base) < 1e-3 * base
        eps = [selection_epsilon(rdp, O, 1e-6, law, m, eta) for m in (1.5, 3, 10, 100)]
        assert all(np.diff(eps) > 0) and eps[0] > base

def test_exact_renyi_divergence_of_best_of_k_gaussians_is_below_theorem_2():
    from scipy.stats import norm
    from scipy.special import logsumexp
    t = np.linspace(-12, 14, 60001); dt = t[1] - t[0]
    for eta, mean, mu in ((1.0, 5.0, 0.3), (0.0, 20.0, 1.0), (0.5, 3.0, 2.0)):
        g = tnb_gamma(mean, eta); c = 1 - g
        logdG = lambda s: (np.log(c) - np.log1p(-c * s) - math.log(math.log(1 / g)) if eta == 0
                           else math.log(eta * c / (g ** -eta - 1)) - (eta + 1) * np.log1p(-c * s))
        lp, lq = (logdG(norm.cdf(t - f)) + norm.logpdf(t - f) for f in (0.0, mu))
        lam, bound = tnb_selection_rdp(O * mu**2 / 2, O, eta, g)
        for a in (1.5, 2.0, 3.0, 6.0):
            exact = max(logsumexp(a * x + (1 - a) * y) for x, y in ((lp, lq), (lq, lp))) + math.log(dt)
            assert exact / (a - 1) <= bound[lam == a][0]

def test_disjoint_splits_cost_the_worse_of_training_and_score():
    run = Ledger((Release("gaussian", 1.0, 4.0, 10),))
    weak_score = SelectionLedger((run,), Release("gaussian", 0.01, 1e-3, 1, touches="validation"), "geometric", 3.0, 1.0)
    tiny_score = weak_score._replace(score=Release("gaussian", 0.01, 10.0, 1, touches="validation"))
    assert weak_score.spent(1e-5) > tiny_score.spent(1e-5)
    assert np.allclose(tiny_score.base_rdp(), ledger_rdp(run))

@pytest.mark.slow
def test_breast_cancer_tuned_dpsgd_at_total_epsilon_one():
    bc = get_problem("logistic", data="breast-cancer")
    perm = np.random.default_rng(2024).permutation(len(bc.data)); cut = int(0.7 * len(bc.data))
    train, test = with_data(bc, bc.data[np.sort(perm[:cut])]), bc.data[np.sort(perm[cut:])]
    accs = []
    for seed in range(3):
        r = tune(train, "dp-sgd", {"lr": [0.5, 2.0, 8.0], "epochs": [5, 20]}, 1.0, 1e-5, mean_runs=3, sampling="poisson", seed=seed, when="always")
        assert r.epsilon_spent <= 1.0
        accs.append(accuracy(bc, r.x, test))
    assert np.mean(accs) >= 0.85, accs


def test_the_tune_record_prices_the_selection_for_add_remove(tmp_path):
    "`dpnb tune`'s privacy block: the selection's ε (replace-one, the guarantee) and the same selection priced for add/remove, for comparison."
    import json
    from dpnotebooks.interface.cli import main
    out = tmp_path / "t.json"
    assert main(["tune", "dp-sgd", "--problem", "logistic", "--data", "breast-cancer", "--test-fraction", "0.3", "--grid", "epochs=2,4",
                 "--epsilon", "2", "--delta", "1e-5", "--seed", "0", "--mean-runs", "3", "--out", str(out)]) == 0
    pr = json.loads(out.read_text())["privacy"]
    assert 0 < pr["epsilon_add_remove"] < pr["epsilon_spent"] <= 2 + 1e-9 and set(pr["event_fields"]) == set(Release._fields)


def test_tune_dry_run_says_whether_tuning_pays(tmp_path, capsys):
    "`dpnb tune --dry-run` prices the selection beside the untuned run, reads no record, writes nothing, and gives a verdict."
    from dpnotebooks.interface.cli import main
    out = tmp_path / "r.json"
    args = ["tune", "dp-sgd", "--problem", "logistic", "--grid", "C=0.03,0.1,0.3", "--mean-runs", "3", "--epsilon", "1", "--delta", "1e-5",
            "--dry-run", "--out", str(out)]
    assert main(args + ["--data", "digits", "--test-fraction", "0.3"]) == 0
    said = capsys.readouterr().out
    assert "epsilon_0 = " in said and "cost more than it gains" in said and not out.exists()
    rs = np.random.default_rng(0); np.savetxt(tmp_path / "big.csv", np.c_[rs.normal(size=(20000, 3)), rs.integers(0, 2, 20000)], delimiter=",")
    assert main(args + ["--data", str(tmp_path / "big.csv"), "--d", "3"]) == 0 and "tuning can pay" in capsys.readouterr().out

def test_where_tuning_would_not_pay_the_defaults_run_with_the_whole_budget_and_no_record_decides_it():
    "34_private_tuning: the verdict reads the plan only; its fallback is `minimize`'s run bit for bit, at the same seed."
    p = _small()
    u = tune(p, "dp-sgd", None, 1.0, 1e-5, seed=3)
    m = minimize(p, "dp-sgd", 1.0, 1e-5, seed=3)
    assert (u.tuned, u.verdict.pays, u.hyperparameters, u.score) == (False, False, {}, None)
    assert np.array_equal(u.x, m.x) and u.epsilon_spent == m.epsilon_spent
    tp = plan_tuning(untouchable(p), "dp-sgd", default_grid(untouchable(p), "dp-sgd", 1.0, 1e-5), 1.0, 1e-5)
    assert tuning_verdict(untouchable(p), tp) == u.verdict

@pytest.mark.parametrize("held_out", [["--test-fraction", "0.3"], ["--test", "TEST"]])
def test_tuning_a_regression_loss_reports_its_held_out_loss(tmp_path, held_out):
    "`dpnb tune --score loss` on a regression problem with held-out data: the record gives the held-out loss (it crashed on accuracy after spending)."
    import json
    from dpnotebooks.interface.cli import main
    rs = np.random.default_rng(0); X = rs.normal(size=(600, 3)); y = X @ [0.5, -0.2, 0.1] + 0.1 * rs.normal(size=600)
    np.savetxt(tmp_path / "tr.csv", np.c_[X[:400], y[:400]], delimiter=","); np.savetxt(tmp_path / "te.csv", np.c_[X[400:], y[400:]], delimiter=",")
    out = tmp_path / "t.json"; held_out = [str(tmp_path / "te.csv") if a == "TEST" else a for a in held_out]
    assert main(["tune", "dp-sgd", "--problem", "robust-regression", "--data", str(tmp_path / "tr.csv"), "--d", "3", *held_out, "--score", "loss",
                 "--grid", "epochs=2,4", "--tune-anyway", "--epsilon", "2", "--delta", "1e-5", "--seed", "0", "--out", str(out)]) == 0
    ev = json.loads(out.read_text())["evaluation"]
    assert "accuracy_out" not in ev and np.isfinite(ev["loss_out"]) and ev["n"] in (120, 200)
