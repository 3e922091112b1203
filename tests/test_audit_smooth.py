"""`dpnb audit` runs the ABGGMU audits (nbs/audits/42_audit_smooth): each stays below its ledger's claim at ε = 1, δ = 1e-5."""
import re
import pytest
from cli_runner import dpnb_here


NAMES = ["abggmu-spider", "abggmu-tree-spider", "abggmu-convex", "abggmu-glm"]

@pytest.mark.parametrize("name", NAMES)
def test_cli_audit_stays_below_claim(name):
    cmd = ["audit", "--mechanism", name, "--trials", "200000", "--seed", "7"]
    out = dpnb_here(*cmd)
    assert out.returncode == 0, out.stdout + out.stderr
    m = re.search(r"claimed ([0-9.]+), empirical lower bound ([0-9.]+)", out.stdout)
    assert m, out.stdout
    claim, bound = map(float, m.groups())
    assert abs(claim - 1.0) < 2e-2, out.stdout                   # calibrated through the real recipe: the budget is spent
    assert 0 < bound < claim, out.stdout                           # the audit has power and the claim holds
