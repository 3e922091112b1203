"""Privacy end to end: a canary audit of *everything* a run returns — the Result, its warnings and errors, and the
JSON of `dpnb run` — on neighbouring datasets that differ in one out-of-bound record, over many unseeded runs; and each
leak the library once had, re-introduced on purpose, is caught."""
import json, warnings
import numpy as np
import pytest
import dpnotebooks.interface.cli as cli
import dpnotebooks.planning.request as request
import dpnotebooks.privacy.clipping as clipping
import dpnotebooks.problems.base as problems
import importlib
M = importlib.import_module("dpnotebooks.planning.minimize")   # the module (the package binds the name `minimize` to the function)
from dpnotebooks.audits.canary_audit import canary_audit, canary_pair, api_runner, cli_runner, CANARIES
from dpnotebooks.problems.base import get_problem

EPS, DELTA = 1.0, 1e-5
CONF = 0.999      # all field bounds hold together at 99.9%: a DP run fails this at most once in a thousand; a deterministic leak still shows

def _logistic(n=200): return get_problem("logistic", n=n, d=2, seed=0)

AUDITS = [  # (algorithm, canary, runs, recipe constants)
    *[("dp-sgd", c, 100, {}) for c in CANARIES],
    ("abggmu-spider", "huge", 80, dict(L1=0.25)), ("abggmu-spider", "nan", 80, dict(L1=0.25)),
    ("klt-first-order", "huge", 80, {}), ("klt-single-pass", "nan", 80, {}),
]

@pytest.mark.slow
@pytest.mark.parametrize("algorithm,canary,runs,kw", AUDITS, ids=[f"{a}-{c}" for a, c, _, _ in AUDITS])
def test_every_field_of_the_result_stays_below_the_claim(algorithm, canary, runs, kw):
    "Unseeded runs through the Python API: no field of the Result, its warnings or its error separates D from D'."
    D, Dp = canary_pair(_logistic(), canary)
    audit = canary_audit(api_runner(algorithm, EPS, DELTA, **kw), D, Dp, runs, EPS, DELTA, CONF, name=f"{algorithm}, {canary}")
    assert not audit.violated, audit
    assert any(k.startswith("x[") for k in audit.bounds), "the point must vary from run to run (unseeded noise)"

CLI_AUDITS = [("dp-sgd", "huge", {}), ("abggmu-spider", "duplicate", dict(L1=0.25))]

@pytest.mark.slow
@pytest.mark.parametrize("algorithm,canary,kw", CLI_AUDITS, ids=[f"{a}-{c}" for a, c, _ in CLI_AUDITS])
def test_every_field_of_the_dpnb_run_json_stays_below_the_claim(algorithm, canary, kw, tmp_path):
    "The JSON record of `dpnb run --data FILE --test TEST`, evaluation block included, over unseeded runs."
    held = get_problem("logistic", n=2200, d=2, seed=0).data[200:]                # held-out samples of the same distribution
    np.savez(tmp_path / "test.npz", X=np.asarray(held.A), y=np.asarray(held.y))
    D, Dp = canary_pair(_logistic(), canary)
    audit = canary_audit(cli_runner(algorithm, "logistic", EPS, DELTA, test=str(tmp_path / "test.npz"), **kw), D, Dp, 80, EPS, DELTA, CONF,
                         name=f"dpnb run {algorithm}, {canary}")
    assert not audit.violated, audit
    assert any(k.startswith("evaluation.") for k in audit.bounds) and not any(k.startswith("nonprivate") for k in audit.bounds)

def test_the_audited_record_is_what_dpnb_run_writes(tmp_path, capsys):
    "The CLI audit calls `run_algorithm` (`planning.request`) in-process; `dpnb run --out` writes the same record (timing aside)."
    p = _logistic(); np.savez(tmp_path / "d.npz", X=np.asarray(p.data.A), y=np.asarray(p.data.y))
    args = dict(epsilon=EPS, delta=DELTA, data=str(tmp_path / "d.npz"), seed=3)
    assert cli.main(["run", "dp-sgd", "--problem", "logistic", "--data", args["data"], "--epsilon", "1", "--delta", "1e-5", "--seed", "3",
                     "--quiet", "--out", str(tmp_path / "r.json")]) == 0
    written = json.loads((tmp_path / "r.json").read_text())
    direct = json.loads(json.dumps(request.run_algorithm("dp-sgd", "logistic", **args)))
    for r in (written, direct): r.pop("seconds")
    assert written == direct

# ---------------------------------------------------------------- each leak of the past, re-introduced, is caught

def _dpsgd_audit(canary, runner=None, runs=100, problem=None):
    D, Dp = canary_pair(problem or _logistic(), canary)
    # C = L (logistic's declared default is L/10): only the out-of-bound canary is ever clipped, so a leaked count is exact
    return canary_audit(runner or api_runner("dp-sgd", EPS, DELTA, C=1.0), D, Dp, runs, EPS, DELTA, CONF)

@pytest.mark.slow
def test_catches_exact_clip_counts_in_the_result(monkeypatch):
    monkeypatch.setattr(M, "_diagnostics", lambda res, diagnostics, algorithm, L: res)       # the counts stay in every Result
    audit = _dpsgd_audit("huge")
    assert audit.violated and audit.worst[0].startswith("nonprivate.clipped"), audit   # the count and the fraction leak alike

@pytest.mark.slow
def test_catches_a_clipping_warning_raised_without_being_asked(monkeypatch):
    from dpnotebooks.privacy.clipping import warn_clipping
    def warn_always(res, diagnostics, algorithm, L):
        warn_clipping(res.nonprivate["clipped_fraction"], 0.0, "per-sample gradients"); return res._replace(nonprivate=None)
    monkeypatch.setattr(M, "_diagnostics", warn_always)
    audit = _dpsgd_audit("huge")
    assert audit.violated and audit.worst[0] == "warnings", audit

@pytest.mark.slow
def test_catches_a_loss_on_the_private_data_in_the_json(monkeypatch):
    original = request._record
    def leaky(req, data, p, held, what, res):
        r = original(req, data, p, held, what, res)
        r["loss_x0"] = float(np.asarray(p.loss(np.asarray(p.x0)[None]))[0])         # the old top-level field: n·Δ is the record's loss
        return r
    monkeypatch.setattr(request, "_record", leaky)
    audit = _dpsgd_audit("duplicate", cli_runner("dp-sgd", "robust-regression", EPS, DELTA), problem=get_problem("robust-regression", n=200, d=2, seed=0))
    assert audit.violated and audit.worst[0] == "loss_x0", audit

def test_catches_a_nan_that_passes_clipping_and_stops_the_run(monkeypatch):
    keep = lambda G, axes: (G, np.zeros(G.shape[:G.ndim - len(axes)], bool))
    monkeypatch.setattr(clipping, "zero_nonfinite", keep)         # no zeroing in clip_rows
    monkeypatch.setattr(problems, "zero_nonfinite", keep)         # nor in the linear models' clipped sum (dp-sgd's path here)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        audit = _dpsgd_audit("nan")
    assert audit.bounds["error"] > EPS and audit.bounds["error.step"] > EPS, audit      # D' stops, at the canary's step; D never
