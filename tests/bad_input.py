"""The bad-input harness: every bad input we could think of, for `minimize`, `dpnb run` and the public building blocks,
each to be answered by a clear error that names the problem and the fix, before any data is read or any noise is drawn.

A test harness, not part of the package: tests/test_bad_input.py runs it, and nbs/audits/90_bad_input.ipynb shows its table.
"""
from __future__ import annotations
import contextlib, functools, os, tempfile, warnings
from typing import Callable, NamedTuple
import numpy as np

from dpnotebooks.core.backend import RNG, set_backend
from dpnotebooks.core import streams
from dpnotebooks.problems.base import LinearModel, Problem, RobustRegression, get_problem
from dpnotebooks.problems.dataset import Dataset, load_file
from dpnotebooks.planning.minimize import minimize
from dpnotebooks.engine.registry import InsufficientDataError
from dpnotebooks.privacy.tree import TreeMechanism
from dpnotebooks.privacy.accounting import calibrate_gaussian
from dpnotebooks.engine.checkpoint import CheckpointError
from dpnotebooks.audits.canary_audit import replace_record

class Touched(RuntimeError):
    "Raised by the tripwire: the call read samples or drew random numbers before failing."

@contextlib.contextmanager
def tripwire():
    "Inside: handing out samples (`DataStream`, `MultiPassView`) or drawing Gaussians from any `RNG` raises `Touched`."
    def trip(what): 
        def f(*a, **k): raise Touched(f"{what} before the error")
        return f
    saved = [(streams.DataStream, "_hand_out"), (streams.MultiPassView, "full"), (streams.MultiPassView, "batch"), (RNG, "normal")]
    old = [getattr(c, n) for c, n in saved]
    for (c, n), what in zip(saved, ["samples read from a stream", "data read in full", "samples read from a view", "noise drawn"]):
        setattr(c, n, trip(what))
    try: yield
    finally:
        for (c, n), f in zip(saved, old): setattr(c, n, f)

class Case(NamedTuple):
    "One bad input: what is wrong, the call, the error it must raise, and words its message must contain."
    what: str
    call: Callable
    error: type
    says: str
    warn: bool = False    # True: a warning (the call may go on), not an error
    setup: Callable|None = None   # run before the tripwire is set (e.g. a real run that leaves a checkpoint to misuse)

@functools.lru_cache(maxsize=1)
def _data():
    "The valid problem every case starts from (built once, outside the tripwire: synthetic data draws Gaussians)."
    return get_problem("robust-regression", n=2000, d=4, seed=0)
def _run(p=None, **kw):
    args = dict(epsilon=1.0, delta=1e-6, alpha=0.1, seed=0); args.update(kw)
    return minimize(_data() if p is None else p, args.pop("algorithm", "klt-single-pass"), **args)
def _with(A=None, y=None):
    p = _data(); return RobustRegression(Dataset(p.data.A if A is None else A, p.data.y if y is None else y))
def _file(name, text=None, **arrays):
    path = os.path.join(tempfile.mkdtemp(), name)
    if arrays: np.savez(path, **arrays)
    else: open(path, "wb" if isinstance(text, bytes) else "w").write(text)
    return path

@functools.lru_cache(maxsize=1)
def _saved_run() -> str:
    "A checkpoint of a finished valid run (epsilon 1, seed 0) on `_data()`, made once, outside the tripwire."
    path = os.path.join(tempfile.mkdtemp(), "run.ckpt"); _run(checkpoint=path); return path
def _ckpt(damage=None):
    "A fresh copy of the saved checkpoint: intact, truncated by 100 bytes, or with one bit flipped in its payload."
    blob = bytearray(open(_saved_run(), "rb").read())
    if damage == "truncate": blob = blob[:-100]
    if damage == "flip": blob[-200] ^= 0x01
    return _file("copy.ckpt", bytes(blob))
def _new_path(): return os.path.join(tempfile.mkdtemp(), "run.ckpt")

class _DimMismatch(Problem):
    "A user loss |<x, a> − y| declared in R^3 on data whose features are in R^4."
    def value_each(self, X, batch): return abs(np.einsum("bkd,bd->bk", X, batch.A) - batch.y[:, None])
    def value(self, X, batch): return abs(X @ batch.A.T - batch.y[None, :])

class _WrongShape(LinearModel):
    "A user loss that sums over the points it was given (returns (b,) instead of (b, k))."
    def psi(self, t, y): return (t - y).sum(axis=-1)
    def dpsi(self, t, y): return np.sign(t - y)

_A, _y = np.random.default_rng(0).normal(size=(2000, 4)) / 2, np.random.default_rng(1).normal(size=2000)
CASES = [
    Case("features not 2-D", lambda: Dataset(_y, _y), ValueError, "2-D array (n, p)"),
    Case("targets of the wrong length", lambda: Dataset(_A, _y[:50]), ValueError, "must have shape (2000,)"),
    Case("non-numeric features", lambda: Dataset(np.array([["a", "b"], ["c", "d"]]), np.zeros(2)), ValueError, "must be numeric"),
    Case("empty data", lambda: RobustRegression(Dataset(np.zeros((0, 4)), np.zeros(0))), ValueError, "empty"),
    Case("x0 of the wrong dimension", lambda: _run(x0=np.zeros(3)), ValueError, "must have shape (4,)"),
    Case("x0 with NaN", lambda: _run(x0=np.array([0.0, np.nan, 0.0, 0.0])), ValueError, "NaN or inf"),
    Case("loss in R^3, features in R^4", lambda: _run(_DimMismatch(_data().data, 3, 1.0, np.zeros(3))), ValueError, "declared in R^3 but the data have 4 features"),
    Case("loss returning the wrong shape", lambda: _run(_WrongShape(_data().data, 4, 1.0, np.zeros(4))), ValueError, "must return (2, 3)"),
    Case("declared L not positive", lambda: Problem(_data().data, 4, 0.0, np.zeros(4)), ValueError, "Lipschitz"),
    Case("epsilon = 0", lambda: _run(epsilon=0.0), ValueError, "`epsilon` must be a positive finite number"),
    Case("epsilon = inf", lambda: _run(epsilon=float("inf")), ValueError, "`epsilon` must be a positive finite number"),
    Case("epsilon NaN", lambda: _run(epsilon=float("nan")), ValueError, "`epsilon` must be a positive finite number"),
    Case("delta = 0", lambda: _run(delta=0.0), ValueError, "open interval (0, 1)"),
    Case("delta = 1", lambda: _run(delta=1.0), ValueError, "open interval (0, 1)"),
    Case("delta >= 1/n (a warning)", lambda: _run(delta=1e-3, beta=1e-9), UserWarning, "not below 1/n", warn=True),
    Case("alpha = 0", lambda: _run(alpha=0.0), ValueError, "`alpha` must be a positive finite number"),
    Case("beta < 0", lambda: _run(beta=-0.1), ValueError, "`beta` must be a positive finite number"),
    Case("n too small for beta", lambda: _run(beta=0.01), InsufficientDataError, "Use at least"),
    Case("unknown algorithm", lambda: _run(algorithm="sgd"), ValueError, "Unknown algorithm 'sgd'. Available:"),
    Case("unknown problem", lambda: get_problem("svm"), ValueError, "Unknown problem 'svm'. Available:"),
    Case("unknown backend", lambda: set_backend("jax"), ValueError, "Unknown backend 'jax'"),
    Case("unknown override", lambda: _run(learning_rate=0.1), ValueError, "Unknown override"),
    Case("missing data file", lambda: load_file("/nonexistent/data.npz"), FileNotFoundError, "does not exist"),
    Case(".npz without X and y", lambda: load_file(_file("w.npz", Z=_A)), ValueError, "must contain arrays 'X' and 'y'"),
    Case(".csv with a bad row", lambda: load_file(_file("bad.csv", "1,2,3\n4,x,6\n")), ValueError, "line 2"),
    Case(".csv with ragged rows", lambda: load_file(_file("ragged.csv", "1,2,3\n4,5\n")), ValueError, "same columns"),
    Case(".csv that is empty", lambda: load_file(_file("empty.csv", "a,b,y\n")), ValueError, "no data rows"),
    Case("unsupported file type", lambda: load_file(_file("d.txt", "1 2")), ValueError, "use .npz"),
    Case("tree with length 0", lambda: TreeMechanism(4, 1.0, 0), ValueError, "`length` must be a positive integer"),
    Case("tree with sigma < 0", lambda: TreeMechanism(4, -1.0, 8), ValueError, "`sigma` must be a non-negative number"),
    Case("calibration with epsilon < 0", lambda: calibrate_gaussian(-1.0, 1e-6, 1.0, 10), ValueError, "`epsilon`"),
    Case("checkpoint path is a directory", lambda: _run(checkpoint=tempfile.mkdtemp()), CheckpointError, "is a directory"),
    Case("checkpoint path not writable", lambda: _run(checkpoint=os.path.join(_file("f", "x"), "run.ckpt")), CheckpointError, "cannot be written"),
    Case("checkpoint path holds another run", lambda: _run(checkpoint=_file("run.ckpt", "x")), CheckpointError, "already exists"),
    Case("checkpoint_every = 0", lambda: _run(checkpoint=_new_path(), checkpoint_every=0), CheckpointError, "positive integer"),
    Case("checkpoint_every without a path", lambda: _run(checkpoint_every=10), ValueError, "needs a checkpoint path"),
    Case("resume without a path", lambda: _run(resume=True), ValueError, "needs the checkpoint path"),
    Case("resume from a missing checkpoint", lambda: _run(checkpoint=_new_path(), resume=True), CheckpointError, "No checkpoint at"),
    Case("resume from a file that is not a checkpoint", lambda: _run(checkpoint=_file("x.ckpt", "hello"), resume=True), CheckpointError, "not a dpnotebooks checkpoint"),
    Case("resume from a truncated checkpoint", lambda: _run(checkpoint=_ckpt("truncate"), resume=True), CheckpointError, "truncated", setup=_saved_run),
    Case("resume from a corrupted checkpoint", lambda: _run(checkpoint=_ckpt("flip"), resume=True), CheckpointError, "SHA-256 does not match", setup=_saved_run),
    Case("resume with another epsilon", lambda: _run(checkpoint=_ckpt(), resume=True, epsilon=2.0), CheckpointError, "the plan", setup=_saved_run),
    Case("resume with other data", lambda: _run(_with(y=-_y), checkpoint=_ckpt(), resume=True), CheckpointError, "the dataset", setup=_saved_run),
    Case("resume with another seed", lambda: _run(checkpoint=_ckpt(), resume=True, seed=1), CheckpointError, "the seed", setup=_saved_run),
]

class Outcome(NamedTuple):
    what: str
    ok: bool         # the expected error (or warning) with the expected words, and no data read or noise drawn before it
    error: str       # the exception's class name
    message: str

def try_case(case:Case) -> Outcome:
    "Run `case.call` under the tripwire; ok when it raised `case.error` whose message contains `case.says` (or warned so)."
    _data()                                                      # the valid starting problem, built before the tripwire is set
    if case.setup is not None: case.setup()
    with tripwire(), warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try: case.call(); err = None
        except Exception as e: err = e
    if case.warn:
        hit = [x for x in w if issubclass(x.category, case.error) and case.says in str(x.message)]
        msg = str(hit[0].message) if hit else (str(err) if err else "no warning")
        return Outcome(case.what, bool(hit) and not isinstance(err, Touched), case.error.__name__ if hit else type(err).__name__, msg)
    if err is None: return Outcome(case.what, False, "no error", "")
    return Outcome(case.what, isinstance(err, case.error) and not isinstance(err, Touched) and case.says in str(err), type(err).__name__, str(err))

def outcomes_markdown(outcomes) -> str:
    "The bad-input table as Markdown."
    esc = lambda s: s.replace("|", "\\|").replace("\n", " ")
    return ("| bad input | error | message (start) | passed |\n|---|---|---|---|\n"
            + "\n".join(f"| {o.what} | `{o.error}` | {esc(o.message[:150])}{'…' if len(o.message) > 150 else ''} | {'yes' if o.ok else 'NO'} |" for o in outcomes))

class Record(NamedTuple):
    "An out-of-bound record: what it is, and how it replaces record `i` of a valid dataset (its features, its target)."
    what: str
    row: Callable      # (A, y, i) -> the record's features
    target: Callable   # (A, y, i) -> the record's target
    nonfinite: bool    # True: its contribution must be exactly zero (the run equals the one with a zero record)

OUT_OF_BOUND = [
    Record("NaN in a feature", lambda A, y, i: np.r_[np.nan, A[i, 1:]], lambda A, y, i: y[i], True),
    Record("inf in a feature", lambda A, y, i: np.r_[A[i, :-1], np.inf], lambda A, y, i: y[i], True),
    Record("inf target", lambda A, y, i: A[i], lambda A, y, i: np.inf, True),
    Record("row of norm 1e200", lambda A, y, i: 1e200 * A[i] / np.linalg.norm(A[i]), lambda A, y, i: y[i], False),
    Record("a duplicate of another record", lambda A, y, i: A[0], lambda A, y, i: y[0], False),
]

def with_record(problem, i:int, rec:Record|None):
    "`problem` with record i replaced by `rec` (None: by the zero record a = 0, whose per-sample loss is constant in x)."
    if rec is None: return replace_record(problem, i, lambda A, y, i: (np.zeros(A.shape[1]), y[i]), "zero")
    return replace_record(problem, i, lambda A, y, i: (rec.row(A, y, i), rec.target(A, y, i)), rec.what)


_REFERENCES = {}
def _reference_run(p, i:int, nonfinite:bool, algorithm:str, **args):
    "The run a record's run is compared with: record i zeroed (a non-finite record) or `p` as is; made once per case and problem object (seeded runs repeat bit for bit)."
    case = (id(p), i, nonfinite, algorithm, tuple(sorted(args.items())))
    if case not in _REFERENCES: _REFERENCES[case] = p, minimize(with_record(p, i, None) if nonfinite else p, algorithm, **args)
    return _REFERENCES[case][1]     # the problem is kept with its run: its id is not reused while the entry lives

def accept_record(rec:Record, # the out-of-bound record
                  algorithm:str, # a registered algorithm
                  problem=None, # a valid linear-model problem (default `_data()`)
                  i:int=7, # which record it replaces
                  **kw, # more `minimize` arguments
                 ) -> Outcome:
    "A run with `rec` at index i: ok when it completes, spends exactly the plan, returns a finite point, and (non-finite `rec`) equals the zero-record run."
    p = _data() if problem is None else problem
    args = dict(epsilon=1.0, delta=1e-6, alpha=0.1, seed=0); args.update(kw)
    try:
        r = minimize(with_record(p, i, rec), algorithm, diagnostics="nonprivate", **args)
        ref = _reference_run(p, i, rec.nonfinite, algorithm, **args)
    except Exception as err: return Outcome(rec.what, False, type(err).__name__, str(err))
    ok = bool(np.all(np.isfinite(r.x))) and r.ledger == ref.ledger and (not rec.nonfinite or np.array_equal(r.x, ref.x))
    return Outcome(rec.what, ok, "accepted", f"{algorithm}: finite output, the planned ledger"
                   + (", identical to the run with a zero record" if rec.nonfinite else "")
                   + f"; NOT private diagnostics: {r.nonprivate['nonfinite_zeroed']} values zeroed, {r.nonprivate['clipped_fraction']:.2%} clipped")

