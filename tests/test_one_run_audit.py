"""The one-run privacy audit (Steinke, Nasr & Jagielski 2023), nbs/audits/45_one_run_audit.ipynb.

Fast: the bound against the binomial tail and a term-by-term reading of the theorem, its validity on randomized
response, DP-SGD (correct below the claim, both bugs caught), KLT's first-order oracle (clipping off caught), the four
ABGGMU algorithms (correct below the claim, clipping off caught at m = 256, sigma/4 at m = 1000), the three second-order
methods lt-sosp, lt-sosp-erm and ganesh-sosp (the same, on the refresh batch's gradient release), the console script,
and the zeroth-order oracles' recorded shifts (one tapped noise-free run equals one run per canary, across a period
boundary; the tap is removed afterwards; ztc-naive's two bugs and ztc's clipping off caught at m = 256).
Slow: a Gaussian mechanism of known epsilon through scores and top-k guesses (validity at 95%), every audited
algorithm correct below its claim, sigma/4 caught in abggmu-spider at m = 1000, the second-order methods correct
below the claim over five more seeds, and klt-single-pass (m = 128) and klt-multi-pass (m = 16) correct below the claim
and clipping off caught.
"""
import math
import numpy as np
import pytest
from scipy import stats
from dpnotebooks.audits.one_run_audit import (one_run_p_value, one_run_epsilon, count_guesses, run_one_run_audit, recorded_shifts, canary_shifts)
from dpnotebooks.privacy.accounting import calibrate_gaussian
from cli_runner import dpnb_here

SIGMA_4 = lambda kw, c: kw.update(sigma=kw["sigma"] / 4)
NO_CLIP = lambda kw, c: kw.update(clip=1e8)

def no_clipping(oracle, canary):
    for bound in ("C1", "C2", "L"):
        if hasattr(oracle, bound): setattr(oracle, bound, 1e8)

def _theorem(m, r, v, eps, delta):
    "The theorem's right side, term by term."
    q = 1 / (1 + math.exp(-eps))
    tail = stats.binom.sf(v - 1, r, q)
    if v == 0: return min(1.0, tail)
    return min(1.0, tail + 2 * m * delta * max(sum(stats.binom.pmf(w, r, q) for w in range(v - i, v)) / i for i in range(1, v + 1)))

@pytest.mark.parametrize("args", [(100, 40, 30, 0.7, 0.0), (1000, 100, 80, 1.0, 1e-5), (50, 50, 45, 2.0, 1e-3), (10, 5, 0, 1.0, 1e-2)])
def test_p_value_is_the_theorem(args):
    assert math.isclose(one_run_p_value(*args), _theorem(*args), rel_tol=1e-10, abs_tol=1e-15)

def test_delta_zero_is_the_binomial_tail_and_all_right_is_closed_form():
    assert one_run_p_value(300, 200, 150, 1.2, 0.0) == pytest.approx(stats.binom.sf(149, 200, 1 / (1 + math.exp(-1.2))), rel=1e-12)
    q = 0.05 ** (1 / 60)
    assert one_run_epsilon(60, 60, 60, 0.0) == pytest.approx(math.log(q / (1 - q)), abs=1e-5)

@pytest.mark.parametrize("eps0, delta", [(1.0, 0.0), (2.0, 1e-4)])
def test_randomized_response_bound_is_valid(eps0, delta):
    "Exact, not sampled: the probability that the bound exceeds the true epsilon is at most 5%."
    m = 300
    q0 = delta + (1 - delta) / (1 + math.exp(-eps0))           # (eps, delta)-randomized response: revealed with probability delta
    exceed = sum(stats.binom.pmf(v, m, q0) for v in range(m + 1) if one_run_epsilon(m, m, v, delta) > eps0)
    assert exceed <= 0.05, exceed

def test_guesses_abstain_on_the_least_confident():
    assert count_guesses([0.1, -5.0, 4.0, -0.2], [-1, -1, -1, 1], 2) == (2, 1)
    with pytest.raises(ValueError, match="between 1 and the number of canaries"): count_guesses([1.0, 2.0], [1, 1], 3)

def test_dpsgd_correct_below_the_claim_and_bugs_caught():
    ok = run_one_run_audit("dp-sgd", 1.0, 1e-5, 1000, rng=5)
    assert abs(ok.epsilon_claimed - 1) < 1e-3 and not ok.violated, ok
    for bug in (SIGMA_4, NO_CLIP):
        a = run_one_run_audit("dp-sgd", 1.0, 1e-5, 1000, rng=5, bug=bug)
        assert a.violated, a

def test_o2nc_first_order_clipping_off_caught():
    ok = run_one_run_audit("klt-first-order", 1.0, 1e-5, 64, 16, rng=3)
    bad = run_one_run_audit("klt-first-order", 1.0, 1e-5, 64, 16, rng=3, bug=no_clipping)
    assert not ok.violated and bad.violated, (ok, bad)

ABGGMU = ("abggmu-convex", "abggmu-glm", "abggmu-spider", "abggmu-tree-spider")

@pytest.mark.parametrize("name", ABGGMU)
def test_abggmu_correct_below_the_claim_and_clipping_off_caught(name):
    ok, bad = (run_one_run_audit(name, 1.0, 1e-5, 256, rng=2, bug=b) for b in (None, NO_CLIP))
    assert abs(ok.epsilon_claimed - 1) < 1e-3 and not ok.violated and bad.violated, (ok, bad)

@pytest.mark.parametrize("name", ["abggmu-convex", "abggmu-glm", "abggmu-tree-spider"])
def test_abggmu_sigma_over_4_caught_with_1000_canaries(name):
    a = run_one_run_audit(name, 1.0, 1e-5, 1000, rng=2, bug=SIGMA_4)
    assert a.violated, a

def test_abggmu_runs_are_seeded_and_the_jl_plan_projects_below_d():
    a, b = (run_one_run_audit("abggmu-glm", 1.0, 1e-5, 300, rng=4) for _ in range(2))
    assert np.array_equal(a.scores, b.scores) and np.array_equal(a.labels, b.labels)
    assert "JL k = " in a.mechanism and int(a.mechanism.split("JL k = ")[1].rstrip(")")) < 301, a.mechanism

def test_unknown_or_bad_requests_are_refused():
    with pytest.raises(ValueError, match="No one-run audit for 'lt-sosp-nonprivate'"): run_one_run_audit("lt-sosp-nonprivate", 1.0, 1e-5)
    with pytest.raises(ValueError, match="`canaries` must be an integer >= 2"): run_one_run_audit("dp-sgd", 1.0, 1e-5, canaries=1)

SOSP = ("lt-sosp", "lt-sosp-erm", "ganesh-sosp")

@pytest.mark.parametrize("name", SOSP)
def test_sosp_correct_below_the_claim_and_bugs_caught(name):
    "The refresh batch's gradient release: clipping off caught at m = 256, sigma/4 at m = 1000 (about 0.2 s and 0.35 s a run)."
    ok, bad = (run_one_run_audit(name, 1.0, 1e-5, 256, rng=2, bug=b) for b in (None, NO_CLIP))
    assert abs(ok.epsilon_claimed - 1) < 1e-3 and not ok.violated and bad.violated, (ok, bad)
    assert run_one_run_audit(name, 1.0, 1e-5, 1000, rng=2, bug=SIGMA_4).violated

def test_sosp_audits_observe_the_tree_leaf_or_the_o1_release():
    assert "8 nodes in each of 4 passes; 32 releases" in run_one_run_audit("lt-sosp-erm", 1.0, 1e-5, 64, rng=0).mechanism
    assert "one O1 release" in run_one_run_audit("ganesh-sosp", 1.0, 1e-5, 64, rng=0).mechanism

def test_cli_one_run():
    res = dpnb_here("audit", "--one-run", "dp-sgd", "--canaries", "500", "--guesses", "50", "--seed", "0")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "one-run audit of dp-sgd" in res.stdout and "claimed 1.0000, empirical lower bound" in res.stdout, res.stdout
    bad = dpnb_here("audit", "--one-run", "dp-sgd", "--canaries", "10", "--guesses", "20")
    assert bad.returncode == 2 and "dpnb: error:" in bad.stderr and "Traceback" not in bad.stderr, bad.stderr

def test_cli_one_run_abggmu(capsys):
    from dpnotebooks.interface.cli import main
    assert main(["audit", "--one-run", "abggmu-convex", "--canaries", "200", "--seed", "0"]) == 0
    out = capsys.readouterr().out
    assert "one-run audit of abggmu-convex (stage 1 of" in out and "claimed 1.0000" in out, out
    assert main(["audit", "--one-run", "lt-sosp", "--canaries", "200", "--seed", "0"]) == 0
    out = capsys.readouterr().out
    assert "one-run audit of lt-sosp (leaf 1 of a refresh tree" in out and "claimed 1.0000" in out, out

def _zo_runs(name, m, seed=0):
    "The `_DiracRuns` the one-run audit builds for an O2NC oracle with m canaries."
    from dpnotebooks.audits.one_run_audit import _oracle_plan, _DiracRuns, _dirac_path
    from dpnotebooks.audits.audit_algorithms import AUDIT_SPECS
    from dpnotebooks.core.backend import make_rng
    r = make_rng(seed); pl = _oracle_plan(name, 1.0, 1e-5, m, r)
    return _DiracRuns(name, pl[0], pl[1], pl[3], pl[4], _dirac_path(AUDIT_SPECS[name], pl[0], pl[4], pl[5]), r, None, 1000.0)

def test_recorded_shifts_equal_one_run_per_canary_across_a_period():
    "klt-single-pass with 30 canaries: 12 steps, period 11, so the last step starts a new period (a fresh g and tree)."
    import dpnotebooks.algorithms.zo_oracles as zo, dpnotebooks.algorithms.ztc_oracle as ztc
    before = (zo.clipped_block_mean, ztc.zo_two_point_clipped, ztc.zo_from_differences)
    runs = _zo_runs("klt-single-pass", 30)
    assert len(runs.Z) > runs.plan.params.period
    sh, (U0, H) = recorded_shifts(runs), canary_shifts(runs, False)
    assert np.allclose(sh.dense(), H, rtol=0, atol=1e-12) and np.allclose(sh.U0, U0, rtol=0, atol=1e-12)
    assert (zo.clipped_block_mean, ztc.zo_two_point_clipped, ztc.zo_from_differences) == before   # the tap is gone

@pytest.mark.slow
def test_zeroth_order_bugs_caught_with_recorded_shifts():
    "m = 256, about 0.5 s a run: ztc-naive and ztc correct below the claim and clipping off caught."
    for name, m in (("ztc-naive", 256), ("ztc", 256)):
        ok, bad = (run_one_run_audit(name, 1.0, 1e-5, m, rng=2, bug=b) for b in (None, no_clipping))
        assert abs(ok.epsilon_claimed - 1) < 2e-3 and not ok.violated and bad.violated, (ok, bad)
        assert (ok.canaries, ok.guesses) == (256, 25), ok

@pytest.mark.slow
@pytest.mark.parametrize("name, m, k", [("klt-single-pass", 128, None), ("klt-multi-pass", 16, 16)])
def test_klt_zeroth_order_correct_below_the_claim_and_clipping_off_caught(name, m, k):
    "About 0.7 s (single-pass, m = 128) and 1.8 s (multi-pass, m = 16, guessing on all) an audit."
    ok, bad = (run_one_run_audit(name, 1.0, 1e-5, m, k, rng=2, bug=b) for b in (None, no_clipping))
    assert not ok.violated and bad.violated, (ok, bad)

@pytest.mark.slow
def test_gaussian_scores_with_top_k_guesses_are_valid():
    "m canaries each a Gaussian mechanism of exactly (1, 1e-5)-DP; guesses on the top k: the bound exceeds 1 in <= 5% of 400 runs."
    mu = 1 / calibrate_gaussian(1.0, 1e-5, 1.0)
    rs, m, k, over = np.random.default_rng(0), 2000, 200, 0
    for _ in range(400):
        S = np.where(rs.uniform(size=m) < 0.5, -1.0, 1.0)
        r, v = count_guesses(S * mu / 2 + rs.normal(size=m), S, k)
        over += one_run_epsilon(m, r, v, 1e-5) > 1.0
    assert over / 400 <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 400), over

@pytest.mark.slow
@pytest.mark.parametrize("name, m", [("dp-sgd", 2000), ("klt-first-order", 128)])   # the zeroth-order oracles: the tests above
def test_every_audited_algorithm_stays_below_its_claim(name, m):
    a = run_one_run_audit(name, 1.0, 1e-5, m, rng=11)
    assert abs(a.epsilon_claimed - 1) < 2e-3 and not a.violated, a

@pytest.mark.slow
@pytest.mark.parametrize("name", SOSP)
def test_sosp_correct_below_the_claim_over_seeds(name):
    "Five seeds at m = 1000 (about 0.35 s a run): the correct mechanism never exceeds its claim."
    assert not any(run_one_run_audit(name, 1.0, 1e-5, 1000, rng=s).violated for s in range(20, 25))

@pytest.mark.slow
def test_abggmu_spider_sigma_over_4_caught_slow():
    "Every one of Private SpiderBoost's 50 steps at d = 1001 (about 1.3 s)."
    a = run_one_run_audit("abggmu-spider", 1.0, 1e-5, 1000, rng=2, bug=SIGMA_4)
    assert a.violated, a
