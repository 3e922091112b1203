"""Every bad input of `bad_input.CASES` (tests/bad_input.py), and the same mistakes through `dpnb run`: a clear error, nothing read or drawn first."""
import functools, warnings
import pytest
from bad_input import CASES, OUT_OF_BOUND, Case, tripwire, try_case, accept_record, _data
from dpnotebooks.interface.cli import main

@pytest.mark.parametrize("case", CASES, ids=[c.what for c in CASES])
def test_bad_input_is_refused_before_any_data_or_noise(case):
    out = try_case(case)
    assert out.ok, out

def test_the_tripwire_catches_a_run_that_reads_data():
    assert not try_case(Case("a valid run", lambda: __import__("bad_input")._run(), ValueError, "")).ok

@pytest.mark.parametrize("args,says", [
    (["--epsilon", "0", "--delta", "1e-6"], "`epsilon` must be a positive finite number"),
    (["--epsilon", "1", "--delta", "1.5"], "open interval (0, 1)"),
    (["--epsilon", "1"], "give epsilon > 0 and delta in (0, 1)"),
    (["--epsilon", "1", "--delta", "1e-6", "--problem", "svm"], "Unknown problem 'svm'"),
    (["--epsilon", "1", "--delta", "1e-6", "--data", "/nonexistent/x.npz"], "does not exist"),
    (["--epsilon", "1", "--delta", "1e-6", "--alpha", "-1"], "`alpha` must be a positive finite number"),
    (["--epsilon", "1", "--delta", "1e-6", "--data", "{data}", "--beta", "0.01"], "Use at least"),
    (["--epsilon", "1", "--delta", "1e-6", "--set", "learning_rate=0.1"], "Unknown override"),
])
def test_dpnb_run_bad_input_exits_2_with_the_reason(args, says, capsys, tmp_path):
    import numpy as np
    p = _data(); np.savez(tmp_path / "d.npz", X=p.data.A, y=p.data.y)             # user data: loading it draws nothing
    args = [a.replace("{data}", str(tmp_path / "d.npz")) for a in args]
    with tripwire():
        assert main(["run", "klt-single-pass", "--quiet", "--out", str(tmp_path / "r.json")] + args) == 2
    err = capsys.readouterr().err
    assert says in err and "Touched" not in err and not (tmp_path / "r.json").exists()

def test_dpnb_run_private_csv_with_a_bad_cell_answers_as_its_neighbour(tmp_path, capsys):
    "A private file's malformed cell is a record like any other: the same exit code and message as the clean file, no line or value named."
    out = {}
    for name, row in (("good", "4,5,6"), ("bad", "4,oops,6")):
        (tmp_path / name).mkdir(); f = tmp_path / name / "d.csv"; f.write_text(f"x1,x2,y\n1,2,3\n{row}\n")
        code = main(["run", "klt-single-pass", "--data", str(f), "--epsilon", "1", "--delta", "1e-6", "--quiet"])
        out[name] = (code, capsys.readouterr().err.replace(str(tmp_path / name), "DIR"))
    assert out["good"] == out["bad"] and "line" not in out["bad"][1] and "oops" not in out["bad"][1]

def test_dpnb_run_unknown_algorithm(capsys):
    assert main(["run", "sgd", "--epsilon", "1", "--delta", "1e-6", "--quiet"]) == 2
    assert "Unknown algorithm 'sgd'" in capsys.readouterr().err

@pytest.mark.parametrize("algorithm", ["dp-sgd", pytest.param("klt-first-order", marks=pytest.mark.slow)])
def test_out_of_spec_loss_warns_and_keeps_the_guarantee(algorithm):
    "Rows 3x too long for the declared L = 1: clipping fires, the run warns, and its ledger is the honest run's."
    import numpy as np
    from dpnotebooks.privacy.clipping import ClippingWarning
    from dpnotebooks.planning.minimize import minimize
    from dpnotebooks.problems.base import RobustRegression, get_problem
    from dpnotebooks.problems.dataset import Dataset
    p = get_problem("robust-regression", n=4000, d=4, seed=0)
    wrong = RobustRegression(Dataset(3 * p.data.A, p.data.y))
    with pytest.warns(ClippingWarning, match="L = 1 is probably too small"):
        r = minimize(wrong, algorithm, epsilon=1.0, delta=1e-6, alpha=0.1, seed=0, diagnostics="nonprivate")
    honest = minimize(p, algorithm, epsilon=1.0, delta=1e-6, alpha=0.1, seed=0)
    assert r.nonprivate["clipped_fraction"] > 0.1 and r.ledger.to_dicts() == honest.ledger.to_dicts() and r.epsilon_spent <= 1.0 + 1e-9
    assert np.all(np.isfinite(r.x)) and honest.nonprivate is None
    with warnings.catch_warnings():                            # without diagnostics nothing data-dependent leaves the run: no warning
        warnings.simplefilter("error")
        quiet = minimize(wrong, algorithm, epsilon=1.0, delta=1e-6, alpha=0.1, seed=0)
    assert quiet.nonprivate is None and np.array_equal(quiet.x, r.x)

class _Flaky(__import__("dpnotebooks.problems.base", fromlist=["RobustRegression"]).RobustRegression):
    "robust-regression whose loss turns NaN (or raises) after `after` evaluations: a fault mid-run."
    records_guarded = True     # a fault of the code at a call count, not of a record: not recomputed by halves (08b_faults.guard_records)
    def __init__(self, data, after, mode):
        super().__init__(data); self.calls, self.after, self.mode = 0, after, mode
    def psi(self, t, y):
        self.calls += 1
        if self.calls > self.after:
            if self.mode == "raise": raise ZeroDivisionError("the user's loss divided by zero")
            return t * float("nan")
        return super().psi(t, y)

@pytest.mark.parametrize("mode,says", [("raise", "ZeroDivisionError")])
@pytest.mark.parametrize("algorithm", ["klt-single-pass", "ztc"])
def test_a_fault_mid_run_stops_with_what_was_spent(algorithm, mode, says):
    "The run stops at the faulty step with a clear error, the last good iterate, and the ledger of what it released so far."
    import numpy as np
    from dpnotebooks.planning.minimize import minimize, plan_run
    from dpnotebooks.engine.faults import RunStopped
    from dpnotebooks.problems.base import get_problem
    p = get_problem("robust-regression", n=20000, d=4, seed=0)
    flaky = _Flaky(p.data, after=60, mode=mode)
    with pytest.raises(RunStopped) as info:
        minimize(flaky, algorithm, epsilon=1.0, delta=1e-6, alpha=0.1, seed=0)
    err = info.value
    T = plan_run(p, algorithm, 1.0, 1e-6, 0.1).params.T
    assert 1 < err.step < T and says in str(err) and f"step {err.step}" in str(err) and algorithm in str(err)
    assert err.ledger is not None and len(err.ledger.to_dicts()) >= 1 and 0 < err.epsilon_spent <= 1.0 + 1e-9
    assert "epsilon = " in str(err) and np.all(np.isfinite(err.x)) and err.x.shape == (4,)

@pytest.mark.parametrize("algorithm", [pytest.param("klt-single-pass", marks=pytest.mark.slow), "ztc"])
def test_a_loss_that_turns_nan_mid_run_is_zeroed_and_the_run_completes(algorithm):
    "A NaN is a per-sample value like any other: zeroed inside the mechanism, so the run ends normally with its whole ledger."
    import numpy as np
    from dpnotebooks.planning.minimize import minimize, plan_run, planned_ledger
    from dpnotebooks.problems.base import get_problem
    p = get_problem("robust-regression", n=5000, d=4, seed=0)
    r = minimize(_Flaky(p.data, after=60, mode="nan"), algorithm, epsilon=1.0, delta=1e-6, alpha=0.1, seed=0, diagnostics="nonprivate")
    assert np.all(np.isfinite(r.x)) and r.nonprivate["nonfinite_zeroed"] > 0
    assert r.ledger == planned_ledger(p, plan_run(p, algorithm, 1.0, 1e-6, 0.1)) and r.epsilon_spent <= 1.0 + 1e-9

def test_dpnb_reports_a_fault_mid_run(tmp_path, capsys, monkeypatch):
    "Through the CLI the same fault is a one-line error and exit status 2, not a traceback."
    import dpnotebooks.planning.request as request    # where `dpnb run` builds its problem
    real = request.get_problem
    monkeypatch.setattr(request, "get_problem", lambda *a, **k: _Flaky(real(*a, **k).data, after=60, mode="raise"))
    assert main(["run", "klt-single-pass", "--n", "20000", "--d", "4", "--epsilon", "1", "--delta", "1e-6", "--alpha", "0.1", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "the run stopped at step" in err and "Privacy spent" in err

class _FlakyGrad(__import__("dpnotebooks.problems.base", fromlist=["Logistic"]).Logistic):
    "logistic whose gradient turns NaN (or raises) after 20 evaluations: a fault in an algorithm with its own loop."
    records_guarded = True     # a fault of the code at a call count, not of a record
    def __init__(self, data, mode):
        super().__init__(data); self.calls, self.mode = 0, mode
    def dpsi(self, t, y):
        self.calls += 1
        if self.calls > 20:
            if self.mode == "raise": raise ZeroDivisionError("the user's gradient divided by zero")
            if self.mode == "domain": raise ValueError("math domain error")   # a ValueError mid-run is a fault, not a refusal
            return super().dpsi(t, y) * float("nan")
        return super().dpsi(t, y)

@pytest.mark.parametrize("mode,says", [("raise", "ZeroDivisionError"), ("domain", "ValueError: math domain error")])
@pytest.mark.parametrize("algorithm", ["dp-sgd", "abggmu-convex", "abggmu-tree-spider"])
def test_own_loop_algorithms_stop_on_a_fault_with_what_they_spent(algorithm, mode, says):
    "A gradient that raises mid-run stops the run with the reason and what it spent (a NaN would be zeroed instead)."
    from dpnotebooks.planning.minimize import minimize
    from dpnotebooks.engine.faults import RunStopped
    from dpnotebooks.problems.base import get_problem
    import dpnotebooks.algorithms.smooth_algorithms  # noqa: F401 (registers them)
    p = get_problem("logistic", n=20000, d=4, seed=0)
    with pytest.raises(RunStopped) as info:
        minimize(_FlakyGrad(p.data, mode), algorithm, epsilon=1.0, delta=1e-6, alpha=0.1, seed=0)
    err = info.value
    assert says in str(err) and algorithm in str(err) and 0 < err.epsilon_spent <= 1.0 + 1e-9 and "Privacy spent" in str(err)


@pytest.mark.parametrize("algorithm", ["dp-sgd", "abggmu-convex", "abggmu-tree-spider"])
def test_own_loop_algorithms_zero_a_nan_gradient_and_finish(algorithm):
    "The NaN mode of the same flaky gradient: zeroed per sample, the run finishes with a finite point and its whole ledger."
    import numpy as np
    from dpnotebooks.planning.minimize import minimize, plan_run, planned_ledger
    from dpnotebooks.problems.base import get_problem
    import dpnotebooks.algorithms.smooth_algorithms  # noqa: F401 (registers them)
    p = get_problem("logistic", n=20000, d=4, seed=0)
    r = minimize(_FlakyGrad(p.data, "nan"), algorithm, epsilon=1.0, delta=1e-6, alpha=0.1, seed=0, diagnostics="nonprivate")
    assert np.all(np.isfinite(r.x)) and r.nonprivate["nonfinite_zeroed"] > 0 and r.ledger == planned_ledger(p, plan_run(p, algorithm, 1.0, 1e-6, 0.1))

@functools.lru_cache(maxsize=None)
def _problem(name):
    "One problem object per name, so that accept_record makes each reference run once."
    from dpnotebooks.problems.base import get_problem
    return get_problem(name, n=4000, d=4, seed=0)

_ACCEPT = [("klt-single-pass", None), ("klt-first-order", None), ("ztc", None), ("dp-sgd", None), ("abggmu-spider", "logistic"),
           ("abggmu-convex", "logistic")]

# The fast tier: each kind of record through the two cheapest algorithms, and a non-finite record (zeroed) and a huge one
# (clipped) through every algorithm; the slow tier adds the rest of the table (the same zeroing and clipping, other records).
_FAST_RECORDS, _FAST_ALGORITHMS = ("NaN in a feature", "row of norm 1e200"), ("klt-single-pass", "dp-sgd")
_OUT_OF_BOUND_CASES = [pytest.param(rec, a, p, id=f"{rec.what}-{a}",
                                    marks=() if rec.what in _FAST_RECORDS or a in _FAST_ALGORITHMS else pytest.mark.slow)
                       for rec in OUT_OF_BOUND for a, p in _ACCEPT]

@pytest.mark.parametrize("rec,algorithm,problem", _OUT_OF_BOUND_CASES)
def test_an_out_of_bound_record_is_accepted_and_handled_in_the_mechanism(rec, algorithm, problem):
    "NaN, inf, a 1e200 row, a duplicate: the run completes with the planned ledger and a finite point; a non-finite record is exactly a zero record."
    p = None if problem is None else _problem(problem)
    out = accept_record(rec, algorithm, p, **({} if problem is None else dict(L1=0.25)))
    assert out.ok, out
