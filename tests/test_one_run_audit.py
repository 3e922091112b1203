"""The one-run privacy audit (Steinke, Nasr & Jagielski 2023), nbs/audits/45_one_run_audit.ipynb.

Fast: the bound against the binomial tail and a term-by-term reading of the theorem, its validity on randomized
response, DP-SGD (correct below the claim, both bugs caught), KLT's first-order oracle (clipping off caught), and the
console script. Slow: a Gaussian mechanism of known epsilon through scores and top-k guesses (validity at 95%), and
every audited algorithm correct below its claim.
"""
import math, subprocess, sys
from pathlib import Path
import numpy as np
import pytest
from scipy import stats
from dpnotebooks.one_run_audit import (one_run_p_value, one_run_epsilon, count_guesses, run_one_run_audit, ONE_RUN_AUDITS)
from dpnotebooks.privacy import calibrate_gaussian

_SCRIPT = Path(sys.executable).parent / "dpnb"
DPNB = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-c", "import sys; from dpnotebooks.cli import main; sys.exit(main())"]
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

def test_unknown_or_bad_requests_are_refused():
    with pytest.raises(ValueError, match="No one-run audit for 'lt-sosp'"): run_one_run_audit("lt-sosp", 1.0, 1e-5)
    with pytest.raises(ValueError, match="`canaries` must be an integer >= 2"): run_one_run_audit("dp-sgd", 1.0, 1e-5, canaries=1)

def test_cli_one_run():
    res = subprocess.run(DPNB + ["audit", "--one-run", "dp-sgd", "--canaries", "500", "--guesses", "50", "--seed", "0"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "one-run audit of dp-sgd" in res.stdout and "claimed 1.0000, empirical lower bound" in res.stdout, res.stdout
    bad = subprocess.run(DPNB + ["audit", "--one-run", "dp-sgd", "--canaries", "10", "--guesses", "20"], capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "dpnb: error:" in bad.stderr and "Traceback" not in bad.stderr, bad.stderr

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
@pytest.mark.parametrize("name, m", [("dp-sgd", 2000), ("klt-first-order", 128), ("ztc-naive", 64), ("ztc", 32), ("klt-single-pass", 32)])
def test_every_audited_algorithm_stays_below_its_claim(name, m):
    a = run_one_run_audit(name, 1.0, 1e-5, m, rng=11)
    assert abs(a.epsilon_claimed - 1) < 2e-3 and not a.violated, a
