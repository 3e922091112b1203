"""Defaults that work. DP-SGD's default plan (Poisson, B ≈ 3√n, 30 epochs, η = 2Φ/(L·G), α = 0, the clip the
problem class declares; the MLPs' declared step R/(G√T) and passes) from public quantities only; α = 0 through `minimize`; the vacuous-target and too-short-step warnings; every algorithm's knobs."""
import math, warnings
import numpy as np
import pytest
from dpnotebooks.planning.minimize import minimize, plan_run
from dpnotebooks.algorithms.dpsgd import dpsgd_recipe, dpsgd_step_size
from dpnotebooks.planning.catalog import ALGORITHMS
from dpnotebooks.planning.catalog import algorithm_knobs
from dpnotebooks.problems.base import get_problem

@pytest.fixture(scope="module")
def logistic():
    return get_problem("logistic", n=2000, d=5, seed=0)

def test_dpsgd_default_plan_is_poisson_unsmoothed_and_public(logistic):
    plan = plan_run(logistic, "dp-sgd", 1.0, 1e-5)
    p = plan.params
    assert (p.sampling, plan.alpha, p.batch, p.T) == ("poisson", 0.0, round(3 * math.sqrt(2000)), 30 * (2000 // p.batch))
    assert p.C == 0.1                                    # logistic declares its clip, L/10 (public: the model class)
    assert p.eta == pytest.approx(dpsgd_step_size(5, p.batch, 1.0, 1.0, p.sigma, "poisson", p.C))
    assert math.isnan(plan.beta) and math.isnan(plan.rate) and "not applicable" in plan.derivation["goldstein"]
    assert plan == plan_run(get_problem("logistic", n=2000, d=5, seed=7), "dp-sgd", 1.0, 1e-5)   # other data, same plan

@pytest.mark.parametrize("hidden,k", [(16, 2), (16, 3), ((8, 8), 2)])
def test_mlps_declare_their_step_rule_and_a_user_value_wins(hidden, k):
    from dpnotebooks.algorithms.deep_mlp import make_mlp
    from dpnotebooks.problems.dataset import Dataset
    r = np.random.default_rng(0); A = r.normal(size=(300, 7))
    y = r.integers(0, k, 300) if k > 2 else np.sign(r.normal(size=300))
    mlp = make_mlp(Dataset(A, y.astype(float), "toy"), hidden, k=k)
    plan = plan_run(mlp, "dp-sgd", 1.0, 1e-5); p = plan.params
    assert (mlp.dpsgd_travel, plan.derivation["epochs"]) == (1.25 * 7, 12)       # R = 1.25·p, min(30, round(300/25)) passes
    assert p.T == 12 * (300 // p.batch) and plan.derivation["step_rule"] == "R/(G·√T), R = 8.75"
    G = math.sqrt(p.C ** 2 + mlp.dim * (p.sigma / p.batch) ** 2)
    assert p.eta == pytest.approx(8.75 / (G * math.sqrt(p.T)), rel=1e-12)
    mine = plan_run(mlp, "dp-sgd", 1.0, 1e-5, epochs=3, lr=0.3)
    assert (mine.derivation["epochs"], mine.params.eta, mine.derivation["step_rule"]) == (3, 0.3, "lr given")
    assert plan_run(mlp, "dp-sgd", 1.0, 1e-5, travel=2.0).derivation["step_rule"] == "R/(G·√T), R = 2"

def test_linear_models_keep_the_generic_step(logistic):
    assert plan_run(logistic, "dp-sgd", 1.0, 1e-5).derivation["step_rule"] == "2Φ/(L·G)"

def test_dpsgd_step_shrinks_with_the_noise():
    etas = [dpsgd_recipe(1000, 100, e, 1e-5, accountant="rdp").params.eta for e in (0.5, 2, 8)]
    assert etas == sorted(etas) and etas[-1] < 2.0

def test_alpha_zero_runs_plain_dpsgd_and_alpha_stays_available(logistic):
    r0 = minimize(logistic, "dp-sgd", epsilon=1.0, delta=1e-5, alpha=0.0, seed=0)
    rd = minimize(logistic, "dp-sgd", epsilon=1.0, delta=1e-5, seed=0)
    assert np.array_equal(r0.x, rd.x) and r0.epsilon_spent <= 1.0
    r1 = minimize(logistic, "dp-sgd", epsilon=1.0, delta=1e-5, alpha=0.05, seed=0, epochs=2)
    assert r1.trace["plan"].alpha == 0.05 and math.isfinite(r1.trace["plan"].beta)
    with pytest.raises(ValueError, match="must be positive|positive"):
        plan_run(logistic, "klt-single-pass", 1.0, 1e-5, alpha=0.0)      # the paper algorithms need a radius
    with pytest.raises(ValueError, match="needs a radius alpha > 0"):
        plan_run(logistic, "dp-sgd", 1.0, 1e-5, alpha=0.0, beta=0.1)

def test_vacuous_target_and_short_steps_warn_and_are_recorded():
    small = get_problem("robust-regression", n=300, d=4, seed=0)
    with pytest.warns(UserWarning, match="vacuous target"):
        plan = plan_run(small, "klt-single-pass", 1.0, 1e-5)
    assert any(w.startswith("vacuous target") for w in plan.warnings)
    with pytest.warns(UserWarning, match="steps too small to move"):
        plan = plan_run(small, "dp-sgd", 1.0, 1e-5, lr=1e-9)
    assert plan.warnings and plan.warnings[0].startswith("steps too small")
    big = get_problem("robust-regression", n=20000, d=4, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error"); assert plan_run(big, "klt-single-pass", 4.0, 1e-5).warnings == ()

def test_every_algorithm_lists_its_knobs_and_unknown_overrides_name_them(logistic):
    for name, alg in ALGORITHMS.items():
        k = algorithm_knobs(name)
        assert set(k["fields"]) == set(alg.params._fields) and all(r in ("noise", "free", "re-priced") for r, _ in k["fields"].values())
    assert set(algorithm_knobs("dp-sgd")["recipe"]) == {"batch_size", "epochs", "lr", "sampling", "C", "travel"}
    assert "c_D" in algorithm_knobs("klt-first-order")["recipe"]
    with pytest.raises(ValueError, match=r"recipe constants \(batch_size, epochs, lr, sampling, C, travel\).*DPSGDParams: T, batch"):
        plan_run(logistic, "dp-sgd", 1.0, 1e-5, B2=64)
