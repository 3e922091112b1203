"""`dpnb audit` runs the lt-sosp audits (nbs/audits/43_audit_sosp): each release family stays below its ledger's claim at ε = 1, δ = 1e-5,
and an injected bug (no clipping, a quarter of the tree noise, a fixed batch instead of the adaptive b_t) is caught. The audit's shifts
come from lt-sosp's own oracle (`lt_oracle`): what it reads equals what `lt_step` computes, and a bug put into the algorithm reaches it."""
import re
import numpy as np
import pytest
from dpnotebooks.audits.audit_sosp import run_sosp_audit
from cli_runner import dpnb_here


@pytest.mark.parametrize("name", ["lt-sosp", "lt-sosp-tree"])
def test_cli_audit_stays_below_claim(name):
    out = dpnb_here("audit", "--mechanism", name, "--trials", "200000", "--seed", "7")
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

# The audit computes its shifts with lt-sosp's own oracle (`lt_oracle`, the function `lt_step` calls), not a copy of it.
from dpnotebooks.algorithms import sosp
from dpnotebooks.core.backend import to_numpy, vnorm
from dpnotebooks.audits.audit_sosp import _sosp_calibration, sosp_canary_pair, oracle_inputs, audit_estimate

@pytest.mark.parametrize("refresh,step", [(True, 0.0), (False, 0.02), (False, 0.3)])
def test_audit_estimate_is_what_lt_step_computes(refresh, step):
    p, _ = _sosp_calibration(3, 1.0, 1e-5, 0.2)
    x = np.array([0.5, -0.2, 0.1]); xq = x - step * np.array([0.6, 0.8, 0.0])
    b = p.b if refresh else sosp.batch_size(vnorm(x - xq), p)
    D, Dp = sosp_canary_pair(b, 3, 5, 1000.0)
    o = audit_estimate(p, Dp, D, x, xq, refresh)
    s, prob, stream = oracle_inputs(p, Dp, D, x, xq, refresh)
    s = sosp.lt_step(s, 1, prob, stream, p, False, False)
    assert np.array_equal(to_numpy(s.grad_est), to_numpy(o.grad_est)) and np.array_equal(to_numpy(s.H), to_numpy(o.H))
    assert (s.rec["refresh"], s.rec["batch"], s.rec["leaf_sens"]) == ([refresh], [b], [o.leaf_sens])

def test_a_bug_in_the_algorithms_oracle_reaches_the_audit(monkeypatch):
    "A bug put into dpnotebooks.algorithms.sosp itself (not through the audit's `bug` argument) is caught by the plain audit."
    monkeypatch.setattr(sosp, "batch_size", lambda step, p: 1)
    assert run_sosp_audit(1.0, 1e-5, trials=50_000, rng=3, release="tree").result.violated
    clip = sosp.clipped_mean_hessian
    monkeypatch.setattr(sosp, "clipped_mean_hessian", lambda pr, x, B, M, b: clip(pr, x, B, 1e8 * M, b))
    assert run_sosp_audit(1.0, 1e-5, trials=50_000, rng=3).result.violated
