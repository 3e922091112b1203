"""Every registered private algorithm, audited through the command line: `dpnb audit --mechanism NAME` (its `main`, in this
process: tests/cli_runner.py).

The audits themselves (recipe calibration, canary, fixed path, likelihood-ratio score) and the broken variants they catch
are in nbs/audits/41_audit_algorithms.ipynb; here we check that the CLI sees every one of them, exits 0 and prints a bound
below the claim.
"""
import re
import pytest
from cli_runner import dpnb_here

ALGORITHMS = ["klt-single-pass", "klt-multi-pass", "klt-first-order", "ztc", "ztc-sharp", "ztc-naive", "dp-sgd"]

def audit(mechanism, trials, seed, *extra):
    res = dpnb_here("audit", "--mechanism", mechanism, "--trials", str(trials), "--seed", str(seed), *extra)
    m = re.search(r"epsilon: claimed ([0-9.]+), empirical lower bound ([0-9.]+)", res.stdout)
    return res, (float(m.group(1)), float(m.group(2))) if m else (None, None)

def test_every_private_algorithm_has_a_registered_audit():
    from dpnotebooks.planning.catalog import ALGORITHMS as REGISTRY
    res = dpnb_here("list")
    listed = res.stdout.split("audits (dpnb audit --mechanism NAME):")[1]
    private = sorted(name for name, alg in REGISTRY.items() if alg.private)
    assert set(ALGORITHMS) <= set(private)
    for name in private: assert re.search(rf"^\s+{re.escape(name)}$", listed, re.M), name   # every private algorithm has an audit

@pytest.mark.parametrize("mechanism", ALGORITHMS)
def test_audit_stays_below_the_claim(mechanism):
    res, (claimed, bound) = audit(mechanism, 200_000, 7)
    assert res.returncode == 0, res.stdout + res.stderr
    assert abs(claimed - 1.0) < 1e-3, res.stdout            # the recipe calibrates to the default epsilon = 1
    assert 0 < bound < claimed, res.stdout                   # a meaningful audit, below the claim

@pytest.mark.slow
@pytest.mark.parametrize("mechanism", ALGORITHMS)
def test_audit_stays_below_the_claim_at_another_target(mechanism):
    "Ten times the runs, at epsilon = 2, delta = 1e-6."
    res, (claimed, bound) = audit(mechanism, 2_000_000, 11, "--epsilon", "2", "--delta", "1e-6")
    assert res.returncode == 0, res.stdout + res.stderr
    assert abs(claimed - 2.0) < 2e-3 and 0 < bound < claimed, res.stdout

@pytest.mark.parametrize("args", [["--epsilon", "0"], ["--delta", "1.5"], ["--trials", "10"]])
def test_audit_refuses_bad_requests(args):
    res, _ = audit("ztc", 1000, 0, *args) if "--trials" not in args else audit("ztc", 10, 0)
    assert res.returncode == 2 and "Traceback" not in res.stderr and "dpnb: error:" in res.stderr, res.stderr
