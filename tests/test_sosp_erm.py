"""lt-sosp-erm (LT App. C's ERM route, nbs/algorithms/21a_sosp_erm and nbs/audits/43a_audit_sosp_erm): the registry entry and
its plan, the K-pass ledger priced before any data is read, refusals before reading, K passes with at most K reads a
sample, the array-api-strict backend, and the audits catching a quarter of the noise and single-pass accounting."""
import json, math, re, warnings
import numpy as np
import pytest
from conftest import untouchable
from dpnotebooks.core import backend as B
from dpnotebooks.planning.request import run_algorithm
from dpnotebooks.planning.minimize import minimize, plan_run, planned_ledger
from dpnotebooks.engine.registry import InsufficientDataError
from dpnotebooks.planning.catalog import ALGORITHMS
from dpnotebooks.problems.base import get_problem, Saddle
from dpnotebooks.algorithms.sosp import sosp_parameters, lt_sosp
from dpnotebooks.core.streams import DataStream
from dpnotebooks.algorithms.sosp_erm import ERMParams, ReuseStream, erm_parameters, erm_releases, lt_sosp_erm, erm_rate
from dpnotebooks.audits.audit_sosp_erm import run_sosp_erm_audit
from cli_runner import dpnb_here

pytestmark = pytest.mark.filterwarnings("ignore:lt-sosp-erm.*below the worst-case:UserWarning")
N, D, KW = 40_000, 4, dict(epsilon=1.0, delta=1e-6, alpha=0.5)

def _consts(p): return dict(G=p.L, M=p.smoothness, rho=p.hessian_lipschitz, B=p.Phi)

def test_registered_with_its_plan():
    alg = ALGORITHMS["lt-sosp-erm"]
    assert alg.private and alg.access == "multi-pass" and alg.stationarity == "sosp" and alg.params is ERMParams
    plan = plan_run(get_problem("saddle", n=N, d=D, seed=0), "lt-sosp-erm", passes=8, **KW)
    assert plan.algorithm == "lt-sosp-erm" and "Thm C.1" in plan.theorem and "NOT the paper's" in plan.theorem
    assert math.isclose(plan.rate, erm_rate(N, D, 1.0, plan.L, plan.params.sosp.M, plan.params.sosp.rho))
    assert plan.derivation["passes"] == 8 and any("E11" in e for e in plan.errata)
    led = planned_ledger(get_problem("saddle", n=N, d=D, seed=0), plan)
    assert 1 - 1e-4 < led.spent(1e-6) <= 1.0 and len(led.releases) == 2 * 8

@pytest.mark.parametrize("K", [1, 3, 16])
@pytest.mark.parametrize("accountant", ["pld", "rdp"])
def test_k_passes_never_overspend(K, accountant):
    p = get_problem("saddle", n=10, d=3, seed=0)
    e = erm_parameters(3, 0.5, 1e-5, alpha=0.3, passes=K, accountant=accountant, **_consts(p))
    assert erm_releases(e).spent(1e-5, accountant) <= 0.5
    one = sosp_parameters(3, e.epsilon_pass, 1e-5, alpha=0.3, accountant=accountant, **_consts(p))
    assert e.sosp == one                                                           # a pass is lt-sosp's calibration at ε_pass

def test_one_pass_is_lt_sosp_bit_for_bit():
    prob = Saddle(Saddle.synthetic(30_000, D, seed=3))
    e = erm_parameters(D, 1.0, 1e-6, alpha=0.5, passes=1, **_consts(prob))
    a = lt_sosp(prob, DataStream(prob.data, rng=1), e.sosp, rng=2)
    b = lt_sosp_erm(prob, ReuseStream(prob.data, 1, rng=1), e, rng=2)
    np.testing.assert_array_equal(a.transcript["iterates"], b.transcript["iterates"]); assert a.stopped == b.stopped

def test_runs_certify_reading_each_sample_at_most_k_times():
    p = get_problem("saddle", n=N, d=D, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore"); r = minimize(p, "lt-sosp-erm", seed=0, passes=8, **KW)
    tr = r.trace
    assert tr["certified"] and 2 <= tr["passes_used"] <= 8 and r.max_uses_per_sample == tr["passes_used"]
    assert r.epsilon_spent <= 1.0 and tr["reads"] > N
    reads = np.concatenate([[0], np.cumsum(2 * tr["transcript"]["batch"])])
    assert reads[-1] == tr["reads"]                                                # two batches a step, nothing else read

@pytest.mark.parametrize("kw, error, message", [
    (dict(epsilon=0.0), ValueError, "`epsilon` must be"),
    (dict(passes=0), ValueError, "passes"),
    (dict(sosp=None), ValueError, "plan fields cannot be overridden"),
    (dict(passes=64), InsufficientDataError, "each pass needs"),
])
def test_refusals_come_before_reading(kw, error, message):
    guarded = untouchable(get_problem("saddle", n=N, d=D, seed=0))
    with pytest.raises(error, match=message):
        minimize(guarded, "lt-sosp-erm", seed=0, **(KW | kw))

def test_clip_bounds_below_the_declared_constants_are_refused_before_reading():
    guarded = untouchable(get_problem("saddle", n=120_000, d=D, seed=0))
    for kw in (dict(M=0.5), dict(rho=0.5)):
        with pytest.raises(ValueError, match="below the problem's declared constant"):
            minimize(guarded, "lt-sosp-erm", seed=0, epsilon=1.0, delta=1e-6, alpha=0.2, passes=2, **kw)

def test_cli_run_and_audit():
    out = dpnb_here("run", "lt-sosp-erm", "--problem", "saddle", "--n", str(N), "--d", str(D), "--epsilon", "1", "--delta", "1e-6",
                                 "--alpha", "0.5", "--set", "passes=8", "--seed", "0", "--quiet")
    assert out.returncode == 0, out.stderr
    out = dpnb_here("audit", "--mechanism", "lt-sosp-erm-tree", "--trials", "50000", "--seed", "7")
    assert out.returncode == 0, out.stdout + out.stderr
    claim, bound = map(float, re.search(r"claimed ([0-9.]+), empirical lower bound ([0-9.]+)", out.stdout).groups())
    assert abs(claim - 1.0) < 1e-3 and 0 < bound < claim, out.stdout

@pytest.mark.parametrize("release,bug", [("tree", "sigma / 4"), ("tree", "one pass"), ("escape", "no clipping")])
def test_audit_catches_injected_bugs(release, bug):
    assert run_sosp_erm_audit(1.0, 1e-5, trials=50_000, rng=3, release=release, passes=16, bug=bug).result.violated

@pytest.mark.parametrize("release", ["escape", "tree"])
def test_honest_audit_within_the_charge(release):
    a = run_sosp_erm_audit(1.0, 1e-5, trials=20_000, rng=1, release=release, passes=4, d=3, alpha=0.2)
    assert a.mu[0] <= a.mu_charged * (1 + 1e-9) and a.epsilon_exact <= a.result.epsilon_claimed + 1e-6 and not a.result.violated

# the same check tests/test_array_api.py makes for every algorithm in tests/test_checkpoint.RUNS (which the lead extends)
@pytest.mark.skipif("array-api-strict" not in B.available_backends(), reason="array-api-strict is not installed (the [dev] extra)")
def test_runs_on_array_api_strict_as_on_numpy():
    def ref():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return run_algorithm("lt-sosp-erm", "saddle", 40_000, 4, 1.0, 1e-6, 0.5, None, 3, passes=4)
    a = ref()
    with B.use_backend("array-api-strict"): b = ref()
    assert b["backend"] == "array-api-strict" and all(isinstance(v, float) for v in b["x_out"])
    np.testing.assert_allclose(b["x_out"], a["x_out"], rtol=1e-8, atol=1e-12)
    assert json.dumps(b["privacy"]["events"], sort_keys=True, default=str) == json.dumps(a["privacy"]["events"], sort_keys=True, default=str)
    assert (b["samples_used"], b["max_uses_per_sample"]) == (a["samples_used"], a["max_uses_per_sample"])

@pytest.mark.slow
def test_kill_and_resume_is_bit_for_bit(tmp_path):
    "As tests/test_checkpoint.py does for every algorithm in its RUNS: killed mid-run, resumed, the same result (the reuse stream included)."
    import signal
    from dpnotebooks.engine.checkpoint import read_checkpoint
    from dpnotebooks.interface.cli import main
    from test_checkpoint import _run_and_kill, _same
    argv = ["lt-sosp-erm", "--problem", "saddle", "--n", "40000", "--d", "4", "--seed", "3", "--quiet", "--epsilon", "1", "--delta", "1e-6",
            "--alpha", "0.5", "--set", "passes=4"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore"); ref = run_algorithm("lt-sosp-erm", "saddle", 40_000, 4, 1.0, 1e-6, 0.5, None, 3, passes=4)
    ck = tmp_path / "run.ck"
    rc, step, total, err = _run_and_kill(argv + ["--checkpoint", str(ck), "--checkpoint-every", "1"], at_step=30, delay=0.01)
    assert rc == -signal.SIGKILL, (rc, err[-2000:])
    saved = read_checkpoint(ck).meta
    assert 20 <= saved["step"] < saved["total"]                                  # past the first pass boundary (about 16 steps a pass)
    out = tmp_path / "resumed.json"
    assert main(["run", "--resume", str(ck), "--quiet", "--out", str(out)]) == 0
    _same(json.loads(out.read_text()), ref)
    assert ref["max_uses_per_sample"] <= 4
