"""End to end through `minimize`: every private algorithm reaches the Goldstein target its recipe promises, spends at
most its budget, and uses the data as its privacy argument says; refusals happen before any data is read."""
import math
import numpy as np
import pytest
from conftest import untouchable
from dpnotebooks.planning.minimize import minimize, plan_run
from dpnotebooks.engine.registry import InsufficientDataError
from dpnotebooks.planning.catalog import ALGORITHMS
from dpnotebooks.privacy.ledger import BudgetExceededError
from dpnotebooks.problems.base import get_problem
from dpnotebooks.problems.dataset import Dataset
from dpnotebooks.problems.stationarity import goldstein_norm

EPS, DELTA, ALPHA = 4.0, 1e-5, 0.05
SETUPS = {  # algorithm: (n, overrides) on robust-regression, d = 4
    "klt-single-pass": (20000, {}),
    "klt-first-order": (20000, dict(m=64)),
    "ztc": (20000, {}),
    "ztc-sharp": (20000, {}),
    "ztc-naive": (20000, {}),
    "klt-multi-pass": (1000, dict(m=32, max_steps=300)),
    "dp-sgd": (20000, {}),
}

@pytest.fixture(scope="module")
def problems():
    return {n: get_problem("robust-regression", n=n, d=4, seed=0) for n in {n for n, _ in SETUPS.values()}}

def test_every_private_algorithm_is_covered():
    # the Goldstein algorithms; the gradient-norm ones (ABGGMU, 23_smooth_algorithms) are in tests/test_smooth_algorithms.py
    # dp-sgd reports the gradient norm (plain DP-SGD, alpha = 0 by default) but plans a reference Goldstein target when alpha > 0
    private = {name for name, a in ALGORITHMS.items() if a.private and a.stationarity == "goldstein"} | {"dp-sgd"}
    assert private == set(SETUPS), private ^ set(SETUPS)

@pytest.mark.slow
@pytest.mark.parametrize("algorithm", sorted(SETUPS))
def test_reaches_the_recipe_target_in_most_seeds(algorithm, problems):
    n, kw = SETUPS[algorithm]
    p = problems[n]
    hits, norms = 0, []
    for seed in range(3):
        res = minimize(p, algorithm, epsilon=EPS, delta=DELTA, alpha=ALPHA, seed=seed, diagnostics="nonprivate", **kw)
        plan = res.trace["plan"]
        g = goldstein_norm(p, res.x, 2 * ALPHA, k=128, rng=1)
        norms.append(g); hits += g <= plan.beta
        assert res.epsilon_spent <= EPS * (1 + 1e-9) and res.seeded and res.seed == seed
        if ALGORITHMS[algorithm].access == "single-pass":
            assert res.max_uses_per_sample == 1 and res.samples_used <= n
        assert 0.0 <= res.nonprivate["clipped_fraction"] < 0.05
    g0 = goldstein_norm(p, p.x0, 2 * ALPHA, k=128, rng=1)
    assert hits >= 2, (algorithm, norms, plan.beta)
    assert np.median(norms) < g0, (algorithm, norms, g0)   # the run made progress from x0

def test_nonprivate_baseline_reports_infinite_epsilon(problems):
    res = minimize(problems[1000], "o2nc-nonprivate", seed=0)
    assert math.isinf(res.epsilon_spent) and res.max_uses_per_sample == 1

@pytest.fixture
def guarded():
    return untouchable(get_problem("robust-regression", n=2000, d=4, seed=0))

@pytest.mark.parametrize("algorithm", sorted(SETUPS))
def test_overspending_plans_are_refused_before_reading(algorithm, guarded):
    plan = plan_run(guarded, algorithm, epsilon=1.0, delta=DELTA, **(dict(max_steps=50) if algorithm == "klt-multi-pass" else {}))
    kw = dict(sigma=plan.params.sigma / 10) | (dict(sigma2=plan.params.sigma2 / 10, max_steps=50) if algorithm == "klt-multi-pass" else {})
    with pytest.raises(BudgetExceededError, match="Nothing was run"):
        minimize(guarded, algorithm, epsilon=1.0, delta=DELTA, seed=0, **kw)

@pytest.mark.parametrize("kwargs, error, message", [
    (dict(epsilon=0.0, delta=DELTA), ValueError, "epsilon"),
    (dict(epsilon=float("nan"), delta=DELTA), ValueError, "epsilon"),
    (dict(epsilon=1.0, delta=0.0), ValueError, "delta"),
    (dict(epsilon=1.0, delta=1.0), ValueError, "delta"),
    (dict(epsilon=1.0, delta=DELTA, beta=1e-3), InsufficientDataError, "Use at least"),
    (dict(epsilon=1.0, delta=DELTA, alpha=5.0), ValueError, "alpha <= Phi/L"),
    (dict(epsilon=1.0, delta=DELTA, T=10**7), InsufficientDataError, "distinct samples"),
    (dict(epsilon=1.0, delta=DELTA, T=0), ValueError, "`T` is a count"),
    (dict(epsilon=1.0, delta=DELTA, T="10"), ValueError, "`T` is a count"),
    (dict(epsilon=1.0, delta=DELTA, Phi=-1), ValueError, "`Phi` must be a positive"),
    (dict(epsilon=1.0, delta=DELTA, max_seconds=-1), ValueError, "`max_seconds` must be a positive"),
])
def test_bad_requests_name_the_problem(kwargs, error, message, guarded):
    with pytest.raises(error, match=message):
        minimize(guarded, "klt-single-pass", seed=0, **kwargs)

def test_unknown_algorithm_lists_the_registry(guarded):
    with pytest.raises(ValueError, match="Available: .*klt-single-pass"):
        minimize(guarded, "sgd-but-private", epsilon=1.0, delta=DELTA)

@pytest.mark.parametrize("where", ["A", "y"])
def test_non_finite_data_is_not_refused_but_zeroed(where):
    "Whether a run happens must not depend on one record: an inf is zeroed inside the mechanism and the run completes."
    p = get_problem("robust-regression", n=3000, d=3, seed=0)
    A, y = np.array(p.data.A), np.array(p.data.y)
    (A if where == "A" else y)[3] = np.inf
    p.data = Dataset(A, y)
    r = minimize(p, "klt-single-pass", epsilon=1.0, delta=DELTA, seed=0)
    assert np.all(np.isfinite(r.x)) and r.epsilon_spent <= 1.0 + 1e-9 and r.nonprivate is None

def test_seeded_runs_repeat_bit_for_bit_and_unseeded_differ():
    p = get_problem("robust-regression", n=3000, d=3, seed=0)
    for alg in ("klt-single-pass", "ztc", "klt-first-order"):
        a, b = (minimize(p, alg, epsilon=1.0, delta=DELTA, seed=11) for _ in range(2))
        assert np.array_equal(a.x, b.x), alg
    c, d = (minimize(p, "klt-single-pass", epsilon=1.0, delta=DELTA) for _ in range(2))
    assert not c.seeded and not np.array_equal(c.x, d.x)

def test_explicit_noise_overrides_are_kept_and_checked(guarded):
    "An explicit sigma2 (multi-pass) is used as given, never silently re-priced; too little noise is refused."
    kw = dict(epsilon=1.0, delta=DELTA, beta=0.2, max_steps=2000)
    base = plan_run(guarded, "klt-multi-pass", **kw)
    assert base.params.period > 1     # there are increment releases for sigma2 to price
    kept = plan_run(guarded, "klt-multi-pass", **kw, sigma2=3 * base.params.sigma2)
    assert kept.params.sigma2 == 3 * base.params.sigma2 and kept.params.sigma == base.params.sigma
    with pytest.raises(BudgetExceededError, match="Nothing was run"):
        minimize(guarded, "klt-multi-pass", seed=0, **kw, sigma2=base.params.sigma2 / 10)

def test_an_algorithm_without_its_own_budget_check_is_still_refused_before_reading(guarded):
    "The budget is checked in one place. A toy algorithm whose `run` reads the data at once and checks nothing is refused by `minimize` when its planned ledger overspends; within budget it runs."
    from typing import NamedTuple
    from dpnotebooks.engine.registry import AlgorithmSpec, RunOutput, Plan
    from dpnotebooks.planning.catalog import register
    from dpnotebooks.privacy.ledger import Ledger, Release
    class MeanParams(NamedTuple):
        C: float; sigma: float
        NOISE = ("sigma",); FREE = ()
    def recipe(n, d, epsilon, delta, alpha, beta, L, Phi, accountant="pld"):
        return Plan("toy-gaussian-mean", "toy", n, d, epsilon, delta, alpha, 1.0, L, Phi, MeanParams(C=L, sigma=1.0), accountant=accountant)
    def planned(problem, plan):   # one Gaussian release of a clipped mean: sensitivity 2C/n (replace-one)
        return Ledger((Release("gaussian", 2 * plan.params.C / plan.n, plan.params.sigma, 1, "all", "mean of clipped rows + N(0, σ²I)"),))
    reads = []
    def run(problem, plan, rng, x0, progress, ck):
        reads.append(len(problem.data)); A = np.asarray(problem.data[np.arange(len(problem.data))].A)
        A = A * np.minimum(1.0, plan.params.C / np.maximum(np.linalg.norm(A, axis=1, keepdims=True), 1e-300))   # rows clipped to C
        return RunOutput(A.mean(0) + plan.params.sigma * np.asarray(rng.normal(problem.dim)), len(A), 1, {}, dict(plan=plan))
    register(AlgorithmSpec("toy-gaussian-mean", "a test algorithm with no budget check of its own", recipe, planned, run, params=MeanParams,
                           no_audit="a test algorithm: this test checks the budget refusal, not the mechanism"))
    try:
        with pytest.raises(BudgetExceededError, match="Nothing was run"):
            minimize(guarded, "toy-gaussian-mean", epsilon=1.0, delta=DELTA, seed=0, sigma=1e-4)
        assert reads == []                                          # refused before `run` was called: the data were never read
        ok = get_problem("robust-regression", n=2000, d=4, seed=0)
        res = minimize(ok, "toy-gaussian-mean", epsilon=1.0, delta=DELTA, seed=0, sigma=0.01)
        assert reads == [2000] and res.epsilon_spent <= 1.0 and res.ledger == planned(ok, res.trace["plan"])
    finally:
        ALGORITHMS.pop("toy-gaussian-mean", None)

@pytest.mark.parametrize("algorithm", sorted(SETUPS))
def test_a_noise_field_set_to_zero_is_refused_not_priced_at_zero(algorithm, guarded):
    "σ = 0 releases without noise: its release was left out of the ledger, so the run reported ε spent 0 of the target. Refused, before reading."
    field = "sigma2" if algorithm == "klt-multi-pass" else "sigma"
    with pytest.raises(BudgetExceededError, match=f"{field} = 0 would release statistics of the data without noise"):
        minimize(guarded, algorithm, epsilon=1.0, delta=DELTA, seed=0, **{field: 0.0}, **(dict(max_steps=50) if algorithm == "klt-multi-pass" else {}))

def test_an_empty_ledger_of_a_private_algorithm_is_refused(guarded):
    "The backstop: whatever set the noise, a private plan whose ledger holds no release is refused (the budget check alone would pass it)."
    from dpnotebooks.planning.minimize import _check_noise
    plan = plan_run(guarded, "dp-sgd", epsilon=1.0, delta=DELTA)
    with pytest.raises(BudgetExceededError, match="no noisy release"): _check_noise(ALGORITHMS["dp-sgd"], plan, ALGORITHMS["dp-sgd"].planned(guarded, plan._replace(params=plan.params._replace(sigma=0.0))))

@pytest.mark.parametrize("algorithm", ["abggmu-spider", "abggmu-tree-spider", "abggmu-convex", "abggmu-glm"])
def test_a_radius_given_to_a_smooth_loss_algorithm_is_said_to_be_ignored(algorithm):
    "The ABGGMU recipes take no smoothing radius: alpha = 0.5 ran bit for bit as the default did, without a word; now a warning says so."
    p = get_problem("logistic", n=2000, d=4, seed=0)
    with pytest.warns(UserWarning, match="alpha = 0.5 is ignored"): plan_run(p, algorithm, epsilon=1.0, delta=DELTA, alpha=0.5, **(dict(L1=0.25, rank=2) if algorithm == "abggmu-glm" else {}))

def test_a_bool_seed_is_refused(guarded):
    with pytest.raises(ValueError, match="`seed` must be an int"): minimize(guarded, "klt-single-pass", epsilon=1.0, delta=DELTA, seed=True)
