"""ganesh-sosp (Ganesh et al. 2023 as LT describe it; nbs/algorithms/21b_ganesh_sosp, nbs/audits/43b_audit_ganesh_sosp): registered,
priced before any data is read, single pass, seeded runs reproducible bit for bit and the same on array-api-strict, a plan that
cites the claimed rate and what LT say holds, and an audit that stays below its claim and catches broken variants."""
import json, math, warnings
import numpy as np
import pytest
from dpnotebooks.core import backend as B
from dpnotebooks.planning.minimize import minimize, plan_run, planned_ledger
from dpnotebooks.planning.catalog import ALGORITHMS
from dpnotebooks.engine.registry import InsufficientDataError
from dpnotebooks.problems.base import Saddle, get_problem
from dpnotebooks.problems.dataset import Dataset, with_data
from dpnotebooks.interface.cli import AUDITS
from dpnotebooks.planning.request import run_algorithm
from dpnotebooks.algorithms.ganesh_sosp import ganesh_claimed_rate, direct_fix_curvature, ganesh_parameters, ganesh_releases
from dpnotebooks.audits.audit_ganesh_sosp import run_ganesh_audit

# the entry tests/test_checkpoint.py's RUNS needs for this algorithm (test_array_api.py and the checkpoint tests read RUNS)
RUN = ("saddle", 70000, 4, dict(epsilon=1, delta=1e-6, alpha=0.5))

class Untouchable(Dataset):
    "Data whose every read raises: a refusal must come before any record is read."
    def __getitem__(self, idx): raise AssertionError("the private data were read")

def _quiet(fn, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore"); return fn(*a, **k)

def _cli_run(seed=3):
    prob, n, d, kw = RUN
    return _quiet(run_algorithm, "ganesh-sosp", prob, n, d, kw["epsilon"], kw["delta"], kw["alpha"], None, seed)

def test_registered_as_a_private_single_pass_sosp_algorithm():
    a = ALGORITHMS["ganesh-sosp"]
    assert a.private and a.access == "single-pass" and a.stationarity == "sosp"
    assert {"ganesh-sosp", "ganesh-sosp-o1"} <= set(AUDITS)

def test_plan_cites_the_claimed_rate_and_what_lt_say_holds():
    prob = Saddle(Saddle.synthetic(800_000, 4, seed=0))
    pl = _quiet(plan_run, prob, "ganesh-sosp", 1.0, 1e-6, alpha=0.2)
    assert pl.rate == pytest.approx(800_000 ** (-1 / 3) + (2 / 800_000) ** (3 / 7)) == ganesh_claimed_rate(800_000, 4, 1.0)
    assert "3/7" in pl.theorem and "d^{1/5}" in pl.theorem
    assert pl.derivation["lambda_direct_fix"] == pytest.approx(-math.sqrt(prob.hessian_lipschitz) * 4 ** 0.2 * 0.2 ** 0.4)
    assert pl.derivation["lambda_direct_fix"] < pl.derivation["lambda_claimed"] == pytest.approx(-math.sqrt(prob.hessian_lipschitz * 0.2))
    assert pl.derivation["rate_tao"] > pl.derivation["rate_claimed"]

def test_priced_and_refused_before_any_data_is_read():
    prob = get_problem("saddle", n=400_000, d=4, seed=0)
    guarded = with_data(prob, Untouchable(prob.data.A, prob.data.y))
    pl = _quiet(plan_run, guarded, "ganesh-sosp", 1.0, 1e-6, alpha=0.2)          # planning reads no record
    assert planned_ledger(guarded, pl).spent(1e-6) == pytest.approx(1.0, abs=1e-5)
    small = get_problem("saddle", n=5000, d=4, seed=0)
    with pytest.raises(InsufficientDataError, match="Use at least"):
        minimize(with_data(small, Untouchable(small.data.A, small.data.y)), "ganesh-sosp", epsilon=1.0, delta=1e-6, alpha=0.2, seed=0)

def test_every_sample_is_in_one_gaussian_release():
    p = ganesh_parameters(4, 1.0, 1e-6, 2.0, 1.0, 1.0, 2.0, 0.2)
    led = ganesh_releases(p)
    assert [r.count for r in led.releases] == [1, 1] and len({r.touches for r in led.releases}) == 2
    assert led.releases[1].sensitivity == pytest.approx(2 * p.M * math.sqrt(p.kappa) / p.b2)

def test_seeded_run_is_reproducible_single_pass_and_spends_its_budget():
    a, b = _cli_run(), _cli_run()
    assert a["x_out"] == b["x_out"] and a["samples_used"] == b["samples_used"] and a["max_uses_per_sample"] == 1
    assert a["privacy"]["epsilon_spent"] <= 1.0 + 1e-9 and a["samples_used"] <= RUN[1]

@pytest.mark.skipif("array-api-strict" not in B.available_backends(), reason="array-api-strict is not installed")
def test_runs_on_array_api_strict_as_on_numpy():
    ref = _cli_run()
    with B.use_backend("array-api-strict"): got = _cli_run()
    assert got["backend"] == "array-api-strict" and B.get_backend() == "numpy"
    np.testing.assert_allclose(got["x_out"], ref["x_out"], rtol=1e-8, atol=1e-12)
    assert json.dumps(got["privacy"]["events"], sort_keys=True, default=str) == json.dumps(ref["privacy"]["events"], sort_keys=True, default=str)
    assert (got["samples_used"], got["max_uses_per_sample"]) == (ref["samples_used"], ref["max_uses_per_sample"])

def test_certified_second_order_point_next_to_the_saddle():
    prob = Saddle(Saddle.synthetic(500_000, 4, seed=1))
    res = _quiet(minimize, prob, "ganesh-sosp", epsilon=1.0, delta=1e-6, alpha=0.2, seed=1)
    tr = res.trace
    assert tr["certified"] and [a["status"] for a in tr["anchors"]] == ["escaped", "stuck"]
    lam = float(np.min(B.to_numpy(prob.hessian_diag(B.asarray(res.x)))))
    assert lam >= tr["lambda_threshold"] and abs(abs(res.x[0]) - math.pi) < 0.3

@pytest.mark.parametrize("release", ["o1", "o2"])
def test_audit_stays_below_the_claim(release):
    a = run_ganesh_audit(1.0, 1e-5, trials=100_000, rng=7, release=release)
    assert a.mu[0] <= a.mu_charged * (1 + 1e-9) and 0 < a.result.epsilon_lower < a.result.epsilon_claimed

@pytest.mark.parametrize("release,bug", [("o2", "sigma / 4"), ("o1", "sigma / 4"), ("o2", "no clipping"), ("o2", "no drift rule")])
def test_audit_catches_broken_variants(release, bug):
    assert run_ganesh_audit(1.0, 1e-5, trials=50_000, rng=3, release=release, bug=bug).result.violated

def test_direct_fix_curvature_is_weaker_than_an_alpha_sosp():
    for a, d in ((0.2, 4), (0.01, 100), (1e-3, 1)):
        assert direct_fix_curvature(a, d, 1.0) <= -math.sqrt(a)
