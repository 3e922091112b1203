"""The one-run audit's zeroth-order designs (nbs/audits/45_one_run_audit.ipynb, "Zeroth-order oracles at the charged
sensitivity"): ztc and klt-single-pass in d = 1 with one canary per period, klt-multi-pass with one direction per sample.

Fast: the d = 1 plan is the multi-run audit's (period, B1, B2, D) stretched to m periods and its claim is the ledger's;
the two noise-free runs give each canary's shift exactly (one run per canary agrees) and only on its own period; the
audited multi-pass run changes only a FREE field (same noise, same claim); runs are seeded; clipping off is caught at
m = 32 (16 guesses). Slow: the correct oracles stay at or below the claim at m = 1000 (seed 2; about 6 s, 6 s and 3 s).
"""
import warnings
import numpy as np
import pytest
from dpnotebooks.audits.one_run_audit import run_one_run_audit, period_shifts, canary_shifts, TIME_SEPARATED, ONE_RUN_DEFAULTS
from dpnotebooks.audits.one_run_audit import _period_plan, _PeriodRuns, _ONE_RUN_FIELDS
from dpnotebooks.planning.minimize import plan_run
from dpnotebooks.audits.audit_algorithms import AUDIT_SPECS
from dpnotebooks.audits.kit import SignedAbs, audit_data
from dpnotebooks.core.backend import make_rng

def no_clipping(oracle, canary):
    for bound in ("C1", "C2", "L"):
        if hasattr(oracle, bound): setattr(oracle, bound, 1e8)

def _runs(name, m, seed=0):
    r = make_rng(seed); pl = _period_plan(name, 1.0, 1e-5, m, r)
    return _PeriodRuns(name, *pl[:5], r, None, 1000.0), pl

@pytest.mark.parametrize("name", TIME_SEPARATED)
def test_period_plan_is_the_multi_run_plan_for_m_periods(name):
    runs, (plan, honest, rows, steps, Z, claim) = _runs(name, 20)
    base = plan_run(SignedAbs(audit_data(AUDIT_SPECS[name].n, 1, 0)), name, 1.0, 1e-5).params
    p = plan.params
    assert (p.period, p.B1, p.B2, p.D, p.T) == (base.period, base.B1, base.B2, base.D, 20 * base.period)
    assert len(honest.y) == 20 * (p.B1 + (p.period - 1) * p.B2) and len(Z) == p.T and honest.A.shape[1] == 1
    assert np.array_equal(np.diff(steps), np.full(19, p.period)) and len(set(rows.tolist())) == 20
    assert abs(claim - 1.0) < 1e-3

@pytest.mark.parametrize("name", TIME_SEPARATED)
def test_period_shifts_equal_one_run_per_canary_and_stay_in_their_period(name):
    runs, _ = _runs(name, 4)
    (U0, H), (U0g, Hg) = period_shifts(runs), canary_shifts(runs, False)
    P = H.shape[1]
    assert np.allclose(U0, U0g, rtol=0, atol=1e-12)
    for j in range(4):
        assert np.allclose(Hg[j, j * P:(j + 1) * P, 0], H[j], rtol=0, atol=1e-12)
        assert np.abs(np.delete(Hg[j, :, 0], np.s_[j * P:(j + 1) * P])).max() == 0   # nothing outside period j
        assert np.abs(H[j]).max() > 0

def test_multi_pass_audited_run_changes_only_a_free_field():
    honest = audit_data(240, 41, 0)
    a = plan_run(SignedAbs(honest), "klt-multi-pass", 1.0, 1e-5, **AUDIT_SPECS["klt-multi-pass"].overrides)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b = plan_run(SignedAbs(honest), "klt-multi-pass", 1.0, 1e-5, **AUDIT_SPECS["klt-multi-pass"].overrides, **_ONE_RUN_FIELDS["klt-multi-pass"])
    assert b.params.m == 1 and a.params.m > 1
    assert (a.params.sigma, a.params.sigma2, a.params.C1, a.params.C2, a.params.T) == (b.params.sigma, b.params.sigma2, b.params.C1, b.params.C2, b.params.T)
    assert "canaries read at every step, 1 direction per sample)" in run_one_run_audit("klt-multi-pass", 1.0, 1e-5, 8, 8, rng=0).mechanism

def test_defaults_and_seeded_runs():
    assert "ztc" not in ONE_RUN_DEFAULTS and "klt-single-pass" not in ONE_RUN_DEFAULTS and "klt-multi-pass" not in ONE_RUN_DEFAULTS   # m = 1000
    a, b = (run_one_run_audit("ztc", 1.0, 1e-5, 20, rng=3) for _ in range(2))
    assert np.array_equal(a.scores, b.scores) and np.array_equal(a.labels, b.labels)
    assert a.mechanism.startswith("ztc (d = 1, 20 periods of 9 steps, canary j at leaf 2"), a.mechanism

@pytest.mark.parametrize("name", [*TIME_SEPARATED, "klt-multi-pass"])
def test_clipping_off_caught_with_32_canaries(name):
    ok, bad = (run_one_run_audit(name, 1.0, 1e-5, 32, 16, rng=4, bug=b) for b in (None, no_clipping))
    assert abs(ok.epsilon_claimed - 1) < 2e-3 and not ok.violated and bad.violated, (ok, bad)

@pytest.mark.slow
@pytest.mark.parametrize("name", [*TIME_SEPARATED, "klt-multi-pass"])
def test_correct_zeroth_order_oracles_stay_below_the_claim_at_1000(name):
    a = run_one_run_audit(name, 1.0, 1e-5, rng=2)
    assert a.canaries == 1000 and abs(a.epsilon_claimed - 1) < 2e-3 and not a.violated, a
