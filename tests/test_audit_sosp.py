"""`dpnb audit` runs the lt-sosp audits (nbs/audits/43_audit_sosp): each release family stays below its ledger's claim at ε = 1, δ = 1e-5,
and an injected bug (no clipping, a quarter of the tree noise, a fixed batch instead of the adaptive b_t) is caught."""
import re, subprocess, sys
from pathlib import Path
import pytest
from dpnotebooks.audit_sosp import run_sosp_audit

_SCRIPT = Path(sys.executable).parent / "dpnb"
DPNB = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-c", "import sys; from dpnotebooks.cli import main; sys.exit(main())"]

@pytest.mark.parametrize("name", ["lt-sosp", "lt-sosp-tree"])
def test_cli_audit_stays_below_claim(name):
    out = subprocess.run(DPNB + ["audit", "--mechanism", name, "--trials", "200000", "--seed", "7"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    m = re.search(r"claimed ([0-9.]+), empirical lower bound ([0-9.]+)", out.stdout)
    assert m, out.stdout
    claim, bound = map(float, m.groups())
    assert abs(claim - 1.0) < 1e-3, out.stdout                 # calibrated through sosp_parameters: the budget is spent
    assert 0 < bound < claim, out.stdout

@pytest.mark.parametrize("release,bug", [("escape", "no clipping"), ("tree", "no clipping"), ("tree", "sigma / 4"), ("tree", "fixed batch")])
def test_audit_catches_injected_bugs(release, bug):
    assert run_sosp_audit(1.0, 1e-5, trials=50_000, rng=3, release=release, bug=bug).result.violated

@pytest.mark.parametrize("release", ["escape", "tree"])
def test_realized_shift_within_the_charge(release):
    a = run_sosp_audit(1.0, 1e-5, trials=1000, rng=1, release=release, d=3, alpha=0.2)
    assert a.mu[0] <= a.mu_charged * (1 + 1e-9) and a.epsilon_exact <= a.result.epsilon_claimed + 1e-6
