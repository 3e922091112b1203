"""Checkpoint and resume: every registered algorithm, killed with SIGKILL at a random step and resumed with
`dpnb run --resume`, gives the uninterrupted run's result bit for bit, with the same ledger and the same data use; a
checkpoint refuses another run's data or parameters, and a corrupted or truncated file is detected, not loaded."""
import functools, json, os, signal, subprocess, sys, time, warnings
import numpy as np
import pytest
from dpnotebooks.interface.cli import main
from dpnotebooks.planning.request import run_algorithm
from dpnotebooks.planning.minimize import minimize
from dpnotebooks.planning.catalog import ALGORITHMS
from dpnotebooks.problems.base import get_problem
from dpnotebooks.engine.checkpoint import CheckpointError, read_checkpoint
from dpnotebooks.engine.faults import RunStopped
from dpnotebooks.core.backend import make_rng

# algorithm: (problem, n, d, privacy and alpha arguments, overrides): small runs of a few hundred steps or less
RUNS = {
    "klt-single-pass": ("robust-regression", 3000, 4, dict(epsilon=2, delta=1e-5), {}),
    "klt-first-order": ("robust-regression", 3000, 4, dict(epsilon=2, delta=1e-5), dict(m=16)),
    "ztc": ("robust-regression", 3000, 4, dict(epsilon=2, delta=1e-5), {}),
    "ztc-sharp": ("robust-regression", 3000, 16, dict(epsilon=2, delta=1e-5), {}),   # d = 16: κ < 1 (at d = 4 it is ZTC)
    "ztc-naive": ("robust-regression", 3000, 4, dict(epsilon=2, delta=1e-5), {}),
    "o2nc-nonprivate": ("robust-regression", 2000, 3, dict(epsilon=None, delta=None), {}),
    "klt-multi-pass": ("robust-regression", 500, 4, dict(epsilon=4, delta=1e-5), dict(m=8, max_steps=60)),
    "dp-sgd": ("robust-regression", 3000, 4, dict(epsilon=2, delta=1e-5), {}),
    "abggmu-spider": ("sigmoid-glm", 1000, 5, dict(epsilon=1, delta=1e-5), {}),
    "abggmu-tree-spider": ("sigmoid-glm", 5000, 5, dict(epsilon=1, delta=1e-5), {}),
    "abggmu-convex": ("logistic", 2000, 5, dict(epsilon=1, delta=1e-5), dict(L1=0.25)),
    "abggmu-glm": ("logistic", 2000, 5, dict(epsilon=1, delta=1e-5), dict(rank=2, L1=0.25)),
    "lt-sosp": ("saddle", 70000, 4, dict(epsilon=1, delta=1e-6, alpha=0.5), {}),
    "lt-sosp-erm": ("saddle", 40000, 4, dict(epsilon=1, delta=1e-6, alpha=0.5), dict(passes=4)),
    "ganesh-sosp": ("saddle", 70000, 4, dict(epsilon=1, delta=1e-6, alpha=0.5), {}),
    "lt-sosp-nonprivate": ("saddle", 70000, 4, dict(epsilon=None, delta=None, alpha=0.5), {}),
}
SEED = 3
VOLATILE = {"seconds", "checkpoint"}   # wall time, and how this run was checkpointed

def test_every_registered_algorithm_is_covered():
    assert set(RUNS) == set(ALGORITHMS), set(RUNS) ^ set(ALGORITHMS)

def _argv(algorithm):
    prob, n, d, kw, ov = RUNS[algorithm]
    argv = [algorithm, "--problem", prob, "--n", str(n), "--d", str(d), "--seed", str(SEED), "--quiet"]
    for k in ("epsilon", "delta", "alpha"):
        if kw.get(k) is not None: argv += [f"--{k}", str(kw[k])]
    for k, v in ov.items(): argv += ["--set", f"{k}={json.dumps(v)}"]
    return argv

def _reference(algorithm):
    prob, n, d, kw, ov = RUNS[algorithm]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_algorithm(algorithm, prob, n, d, kw.get("epsilon"), kw.get("delta"), kw.get("alpha"), None, SEED, **ov)

@functools.lru_cache(maxsize=None)
def _fresh(algorithm):
    "The uninterrupted run through `minimize` on `RUNS[algorithm]`, made once: the tests that compare with it share it (seeded runs repeat bit for bit)."
    prob, n, d, kw, ov = RUNS[algorithm]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return minimize(get_problem(prob, n=n, d=d, seed=0), algorithm, seed=SEED, **kw, **ov)

# The child announces each save and then pauses briefly, so the SIGKILL lands while the run is in progress.
_CHILD = """
import sys, time
import dpnotebooks.engine.checkpoint as C
from dpnotebooks.interface.cli import main
_save = C.Checkpointer.save
def save(self, state):
    _save(self, state); print("saved", self.step, self.total, flush=True); time.sleep(0.05)
C.Checkpointer.save = save
sys.exit(main(sys.argv[1:]))
"""

def _run_and_kill(argv, at_step:int, delay:float, sig=signal.SIGKILL):
    "Start `dpnb run` in a child process, send `sig` once a checkpoint of step >= at_step exists; return (returncode, last step seen, total)."
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, "run", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONWARNINGS="ignore"))
    step = total = None
    for line in proc.stdout:
        if line.startswith("saved"):
            step, total = map(int, line.split()[1:])
            if step >= min(at_step, total - 1):
                time.sleep(delay); proc.send_signal(sig); break
    out, err = proc.communicate(timeout=300)
    return proc.returncode, step, total, err

def _same(a:dict, b:dict):
    assert a.keys() == b.keys()
    for k in a.keys() - VOLATILE: assert a[k] == b[k], (k, a[k], b[k])

# three representatives in the fast tier (O2NC with a tree, a smooth loop, the SOSP loop); every algorithm in the slow tier
FAST_RESUME = {"klt-single-pass", "abggmu-spider", "lt-sosp"}

@pytest.mark.parametrize("algorithm", [pytest.param(a, marks=() if a in FAST_RESUME else pytest.mark.slow) for a in sorted(RUNS)])
def test_kill_and_resume_is_bit_for_bit(algorithm, tmp_path):
    ref = _reference(algorithm)
    rng = np.random.default_rng(sorted(RUNS).index(algorithm))              # a random step and moment, reproducible per algorithm
    ck = tmp_path / "run.ck"
    rc, step, total, err = _run_and_kill(_argv(algorithm) + ["--checkpoint", str(ck), "--checkpoint-every", "1"],
                                         at_step=int(rng.integers(1, 6)), delay=float(rng.uniform(0, 0.05)))
    assert rc == -signal.SIGKILL, (rc, err[-2000:])                          # killed mid-run, not finished
    saved = read_checkpoint(ck).meta
    assert 1 <= saved["step"] < saved["total"]
    out = tmp_path / "resumed.json"                                           # resumed saving less often: one save a step,
    assert main(["run", "--resume", str(ck), "--checkpoint-every", "100000", "--quiet", "--out", str(out)]) == 0   # 6 ms each, would cost 10 s
    res = json.loads(out.read_text())
    _same(res, ref)                                                          # x_out, ledger, ε, data use, clipping, stationarity
    assert res["checkpoint"]["resumed_from"] == saved["step"]
    if ALGORITHMS[algorithm].access == "single-pass":                        # no sample used twice across the interruption
        assert res["max_uses_per_sample"] == 1 and res["samples_used"] == ref["samples_used"]

@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), pytest.param(signal.SIGTERM, 143, marks=pytest.mark.slow)])
def test_interrupt_saves_and_exits_cleanly(sig, code, tmp_path):
    ck = tmp_path / "run.ck"
    rc, step, total, err = _run_and_kill(_argv("klt-single-pass") + ["--checkpoint", str(ck), "--checkpoint-every", "500"], 1, 0.0, sig)
    assert rc == code, err[-2000:]
    assert "dpnb run --resume" in err and "Traceback" not in err
    saved = read_checkpoint(ck).meta
    assert f"after step {saved['step']};" in err                             # the state of the step it stopped after is on disk
    out = tmp_path / "r.json"
    assert main(["run", "--resume", str(ck), "--quiet", "--out", str(out)]) == 0
    _same(json.loads(out.read_text()), _reference("klt-single-pass"))

@pytest.fixture(scope="module")
def saved_run(tmp_path_factory):
    "A klt-single-pass run checkpointed every 200 steps; the file after it finished."
    path = tmp_path_factory.mktemp("ck") / "run.ck"
    p = get_problem("robust-regression", n=3000, d=4, seed=0)
    res = minimize(p, "klt-single-pass", epsilon=2, delta=1e-5, seed=SEED, checkpoint=path, checkpoint_every=200)
    return path, p, res

def test_resume_refuses_another_run(saved_run):
    path, p, res = saved_run
    other = get_problem("robust-regression", n=3000, d=4, seed=1)            # other data, same shape
    with pytest.raises(CheckpointError, match="the dataset"):
        minimize(other, "klt-single-pass", epsilon=2, delta=1e-5, seed=SEED, checkpoint=path, resume=True)
    with pytest.raises(CheckpointError, match="the plan"):
        minimize(p, "klt-single-pass", epsilon=1, delta=1e-5, seed=SEED, checkpoint=path, resume=True)
    with pytest.raises(CheckpointError, match="the seed"):
        minimize(p, "klt-single-pass", epsilon=2, delta=1e-5, seed=SEED + 1, checkpoint=path, resume=True)
    with pytest.raises(CheckpointError, match="already exists"):           # a fresh run never overwrites progress
        minimize(p, "klt-single-pass", epsilon=2, delta=1e-5, seed=SEED, checkpoint=path)

def test_resuming_a_finished_run_returns_its_result(saved_run):
    path, p, res = saved_run
    again = minimize(p, "klt-single-pass", epsilon=2, delta=1e-5, seed=SEED, checkpoint=path, resume=True)
    assert np.array_equal(again.x, res.x) and again.ledger == res.ledger
    assert again.trace["checkpoint"]["resumed_from"] == res.trace["plan"].params.T
    assert "bytes" not in again.trace["checkpoint"]           # the file's size follows its exact counters (a pickled int's width): not released

@pytest.mark.parametrize("damage, message", [(lambda b: b[:-7], "truncated"), (lambda b: b[:40], "truncated"),
                                             (lambda b: b[:-100] + bytes([b[-100] ^ 4]) + b[-99:], "corrupted"),
                                             (lambda b: b"not a checkpoint" + b, "not a dpnotebooks checkpoint")])
def test_damaged_checkpoints_are_detected_not_loaded(saved_run, tmp_path, damage, message, capsys):
    bad = tmp_path / "bad.ck"; bad.write_bytes(damage(saved_run[0].read_bytes()))
    with pytest.raises(CheckpointError, match=message): read_checkpoint(bad)
    assert main(["run", "--resume", str(bad), "--quiet"]) == 2
    assert message in capsys.readouterr().err

def test_cli_resume_checks_the_algorithm_name(tmp_path, capsys):
    ck = tmp_path / "r.ck"
    assert main(["run", *_argv("ztc-naive"), "--checkpoint", str(ck)]) == 0
    assert main(["run", "ztc", "--resume", str(ck), "--quiet"]) == 2
    assert "not 'ztc'" in capsys.readouterr().err
    assert main(["run", "--quiet"]) == 2                                    # neither an algorithm nor --resume
    assert main(["run", *_argv("ztc-naive"), "--checkpoint-every", "3"]) == 2  # --checkpoint-every without --checkpoint

from dpnotebooks.problems.base import RobustRegression
from test_bad_input import _Flaky, _FlakyGrad   # losses that turn NaN or raise mid-run

def test_a_fault_leaves_the_last_good_state_on_disk(tmp_path):
    p = get_problem("robust-regression", n=3000, d=4, seed=0)
    path = tmp_path / "f.ck"
    with pytest.raises(RunStopped) as err:
        minimize(_Flaky(p.data, after=300, mode="raise"), "klt-single-pass", epsilon=2, delta=1e-5, seed=SEED, checkpoint=path, checkpoint_every=10)
    stop, meta = err.value, read_checkpoint(path).meta
    assert stop.checkpoint == (path, meta["step"]) and stop.step - 10 <= meta["step"] < stop.step
    assert "last good state" in str(stop) and str(path) in str(stop)
    assert meta["ledger"] == ALGORITHMS["klt-single-pass"].build(p, meta_plan(p), make_rng(0))[0].releases(meta["step"])

def meta_plan(p):
    from dpnotebooks.planning.minimize import plan_run
    return plan_run(p, "klt-single-pass", epsilon=2, delta=1e-5)

def test_own_loop_faults_name_the_step_and_its_exact_ledger():
    "DP-SGD's releases are known step by step: a fault reports the step and the releases made up to it, not the whole budget."
    p = get_problem("logistic", n=20000, d=4, seed=0)
    with pytest.raises(RunStopped) as err:
        minimize(_FlakyGrad(p.data, "raise"), "dp-sgd", epsilon=1.0, delta=1e-6, alpha=0.1, seed=0, sampling="poisson")
    stop = err.value
    assert stop.step is not None and not stop.at_most and f"step {stop.step}" in str(stop)
    assert stop.ledger.releases[0].count == stop.step and 0 < stop.epsilon_spent < 1.0

class _CtrlC(RobustRegression):
    "robust regression that receives SIGINT in the middle of its `at`-th loss evaluation (a user pressing Ctrl-C mid-step)."
    at, sent = 777, False                                      # class settings: not part of the problem's fingerprint
    def psi(self, t, y):
        _CtrlC.at -= 1
        if _CtrlC.at == 0 and not _CtrlC.sent: _CtrlC.sent = True; os.kill(os.getpid(), signal.SIGINT)
        return super().psi(t, y)

def test_sigint_in_process_saves_the_step_it_stops_after(tmp_path):
    "Ctrl-C mid-step is deferred to the end of the step, and that step is saved even between scheduled saves."
    from dpnotebooks.engine.checkpoint import RunInterrupted
    p = get_problem("robust-regression", n=3000, d=4, seed=0)
    path, kw = tmp_path / "i.ck", dict(epsilon=2, delta=1e-5, seed=SEED)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)   # as in a terminal (a test runner's worker may ignore SIGINT)
    try:
        with pytest.raises(RunInterrupted) as err:
            minimize(_CtrlC(p.data), "klt-single-pass", checkpoint=path, checkpoint_every=10**6, **kw)
        restored = signal.getsignal(signal.SIGINT)
    finally: signal.signal(signal.SIGINT, before)
    step = read_checkpoint(path).meta["step"]
    assert step == err.value.step and 1 <= step < 1487 and restored is signal.default_int_handler   # the handler is given back
    res = minimize(_CtrlC(p.data), "klt-single-pass", checkpoint=path, resume=True, **kw)   # SIGINT is sent only once
    assert np.array_equal(res.x, minimize(p, "klt-single-pass", **kw).x)

SLOW_FAILED_SAVE = {"klt-first-order", "klt-single-pass", "o2nc-nonprivate"}       # the longest runs: in the slow tier

@pytest.mark.parametrize("algorithm", [pytest.param(a, marks=pytest.mark.slow if a in SLOW_FAILED_SAVE else ()) for a in sorted(RUNS)])
def test_a_failed_save_stops_with_its_ledger_and_resumes(algorithm, tmp_path, monkeypatch):
    "Disk full at the 3rd save: the run stops with RunStopped naming the step whose state was lost and the exact ledger of the releases made by then; the 2nd save is intact and resumes bit for bit."
    import errno
    import dpnotebooks.engine.checkpoint as C
    prob, n, d, kw, ov = RUNS[algorithm]
    p, path = get_problem(prob, n=n, d=d, seed=0), tmp_path / "full.ck"
    args = dict(kw, seed=SEED, **ov)
    real = C.write_checkpoint
    def disk_full(target, meta, state):
        if meta["step"] > 2: raise OSError(errno.ENOSPC, "No space left on device")
        return real(target, meta, state)
    monkeypatch.setattr(C, "write_checkpoint", disk_full)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RunStopped) as err: minimize(p, algorithm, checkpoint=path, checkpoint_every=1, **args)
        stop = err.value
        assert stop.step == 3 and stop.checkpoint == (path, 2) and "No space left" in str(stop) and "resume" in str(stop)
        assert read_checkpoint(path).meta["step"] == 2
        if ALGORITHMS[algorithm].ledger_at is not None:     # lt-sosp(-erm): the releases are known only as the plan's total
            assert not stop.at_most and stop.ledger is not None and 0 < stop.epsilon_spent <= kw["epsilon"] * (1 + 1e-9)
        monkeypatch.setattr(C, "write_checkpoint", real)
        resumed = minimize(p, algorithm, checkpoint=path, resume=True, checkpoint_every=10**6, **args)   # the rest saved once, at the end
    fresh = _fresh(algorithm)
    assert np.array_equal(resumed.x, fresh.x) and resumed.ledger == fresh.ledger and resumed.samples_used == fresh.samples_used

def test_an_unwritable_checkpoint_path_is_refused_before_the_run(tmp_path):
    (tmp_path / "a_file").write_text("x")
    p = get_problem("robust-regression", n=3000, d=4, seed=0)
    for path, says in ((tmp_path / "a_file" / "r.ck", "cannot be written"), (tmp_path, "is a directory")):
        with pytest.raises(CheckpointError, match=says): minimize(p, "klt-single-pass", epsilon=2, delta=1e-5, seed=0, checkpoint=path)
    assert main(["run", *_argv("ztc-naive"), "--checkpoint", str(tmp_path / "a_file" / "r.ck")]) == 2

@pytest.mark.parametrize("algorithm", sorted(RUNS))
def test_the_run_spends_what_its_plan_was_priced_at(algorithm):
    "`planned_ledger` (what `minimize` checks against the budget before reading data) is exactly the ledger the finished run reports."
    from dpnotebooks.planning.minimize import plan_run, planned_ledger
    prob, n, d, kw, ov = RUNS[algorithm]
    p = get_problem(prob, n=n, d=d, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = plan_run(p, algorithm, kw.get("epsilon"), kw.get("delta"), kw.get("alpha"), **ov)
    res = _fresh(algorithm)
    assert res.trace["plan"] == plan and planned_ledger(p, plan) == res.ledger

from dpnotebooks.problems.base import Saddle

class _RaisingSaddle(Saddle):
    "The saddle problem whose per-sample gradients raise after 30 evaluations (a NaN would be zeroed, not stop the run)."
    records_guarded = True     # a fault of the code at a call count, not of a record
    def __init__(self, data): super().__init__(data); self.calls = 0
    def grad_each(self, X, batch):
        self.calls += 1
        if self.calls > 30: raise ZeroDivisionError("the user's gradient divided by zero")
        return super().grad_each(X, batch)

@pytest.mark.parametrize("algorithm", ["dp-sgd", "abggmu-spider", "abggmu-tree-spider", "abggmu-convex", "abggmu-glm", "lt-sosp"])
def test_own_loop_fault_stops_at_its_step_with_the_last_good_state_saved(algorithm, tmp_path):
    "A loss that raises mid-run stops an own-loop run at that step, with the exact ledger of the releases made by then (an upper bound for lt-sosp) and the previous step on disk."
    from dpnotebooks.planning.minimize import plan_run
    path = tmp_path / "nan.ck"
    if algorithm == "lt-sosp":
        p = _RaisingSaddle(get_problem("saddle", n=70000, d=4, seed=0).data); kw = dict(epsilon=1, delta=1e-6, alpha=0.5)
    else:
        p = _FlakyGrad(get_problem("logistic", n=20000, d=4, seed=0).data, "raise")
        kw = dict(epsilon=1.0, delta=1e-6, alpha=0.1, **(dict(L1=0.25, rank=2) if algorithm == "abggmu-glm" else {}))
        if algorithm in ("abggmu-tree-spider", "abggmu-convex"): p.calls = -100   # a round (stage) makes many gradient calls: fail in the 2nd or later
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RunStopped) as err: minimize(p, algorithm, seed=0, checkpoint=path, checkpoint_every=1, **kw)
    stop = err.value
    assert stop.step is not None and f"step {stop.step}" in str(stop) and "ZeroDivisionError" in str(stop)
    assert stop.step > 1 and stop.checkpoint == (path, stop.step - 1) and read_checkpoint(path).meta["step"] == stop.step - 1
    if algorithm == "lt-sosp": assert stop.at_most and stop.epsilon_spent == 1
    else:
        plan = plan_run(p, algorithm, kw["epsilon"], kw["delta"], kw["alpha"], **{k: v for k, v in kw.items() if k in ("L1", "rank")})
        assert not stop.at_most and stop.ledger == ALGORITHMS[algorithm].ledger_at(p, plan, stop.step) and 0 < stop.epsilon_spent <= 1
