"""Every plan's work is known before it runs, and a plan over the time limit is refused before any data
is read, naming settings that fit (`dpnotebooks.planning.cost`, nbs/planning/35_cost.ipynb)."""
import json, math, warnings
import pytest
from dpnotebooks.planning.minimize import minimize, plan_run
from dpnotebooks.planning.catalog import ALGORITHMS
from dpnotebooks.planning import cost
from dpnotebooks.planning.cost import (Work, estimate_work, count_work, check_time, fitting_settings, shaped, TooSlowError,
                              calibrate, Units)
from dpnotebooks.problems.base import get_problem
from dpnotebooks.problems.dataset import with_data, Dataset
from dpnotebooks.interface.cli import main
from dpnotebooks.engine.faults import RunStopped

class Untouchable(Dataset):
    "Data whose every read raises: a refusal must come before any record is read."
    def __getitem__(self, idx): raise AssertionError("the private data were read")

def guarded(problem): return with_data(problem, Untouchable(problem.data.A, problem.data.y))

# one request each algorithm can plan at a small size
REQUESTS = {"klt-single-pass": ("robust-regression", {}), "klt-multi-pass": ("robust-regression", {}),
            "klt-first-order": ("robust-regression", {}), "ztc": ("robust-regression", {}), "ztc-sharp": ("robust-regression", {}), "ztc-naive": ("robust-regression", {}),
            "o2nc-nonprivate": ("robust-regression", {}), "dp-sgd": ("logistic", {}), "abggmu-spider": ("sigmoid-glm", {}),
            "abggmu-tree-spider": ("sigmoid-glm", {}), "abggmu-convex": ("logistic", {}), "abggmu-glm": ("logistic", dict(rank=3)),
            "lt-sosp": ("saddle", dict(alpha=0.2)), "lt-sosp-erm": ("saddle", dict(alpha=0.2)), "ganesh-sosp": ("saddle", dict(alpha=0.2)), "lt-sosp-nonprivate": ("saddle", dict(alpha=0.2))}

def _plan(alg):
    name, kw = REQUESTS[alg]
    prob = get_problem(name, n=400_000 if name == "saddle" else 4000, d=4, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return prob, plan_run(prob, alg, 1.0, 1e-6, **kw)

def test_every_registered_algorithm_has_an_estimate():
    assert [name for name, spec in ALGORITHMS.items() if spec.work is None] == []
    for alg in ALGORITHMS:
        prob, plan = _plan(alg)
        w = estimate_work(guarded(prob), plan)          # the estimate reads no record
        assert isinstance(w, Work) and w.steps >= 1 and w.seconds > 0 and math.isfinite(w.seconds), (alg, w)
        assert w.values + w.grads + w.hessians > 0 and w.memory > 0 and w.bound in ("exact", "expected", "at most"), (alg, w)

def test_calibration_reads_no_record_and_is_cached():
    prob = guarded(get_problem("robust-regression", n=500, d=6, seed=0))
    assert calibrate(prob) is calibrate(prob)

def test_counts_scale_with_the_plan():
    prob, plan = _plan("klt-multi-pass")
    c, c2 = count_work(plan), count_work(plan.tune(T=2 * plan.params.T))
    assert c2.values > 1.9 * c.values and c2.steps == 2 * c.steps

def test_refusal_before_any_data_is_read_with_settings_that_fit():
    prob = get_problem("robust-regression", n=3000, d=4, seed=0)
    with pytest.raises(TooSlowError, match="Settings that fit") as e:
        minimize(guarded(prob), "klt-multi-pass", epsilon=1.0, delta=1e-6, max_seconds=5.0)
    assert "--set T=" in str(e.value) and "nothing was spent" in str(e.value)
    with pytest.raises((AssertionError, RunStopped), match="the private data were read"):       # without the limit the same request reads data
        minimize(guarded(prob), "klt-multi-pass", epsilon=1.0, delta=1e-6, T=2, M=1)

# Unit times of this order on a 2-core AMD EPYC, fixed so that what fits does not depend on the machine or its load (the
# timed calibration, which `calibrate` does once per loss and shape, would otherwise decide whether reducing m is enough).
FIXED_UNITS = Units(value=5e-8, grad=5e-8, hess=math.nan, draw=2e-8, step=5e-4, value_fast=1e-8, draw_fast=2e-8)

def test_the_proposed_settings_fit(monkeypatch):
    monkeypatch.setattr(cost, "calibrate", lambda problem, hessians=False: FIXED_UNITS)
    prob = get_problem("robust-regression", n=3000, d=4, seed=0)
    small = dict(max_steps=60, m_max=16)                                             # a plan of about a second
    plan = plan_run(prob, "klt-multi-pass", 1.0, 1e-6, **small)
    limit = estimate_work(prob, plan).seconds / 5
    replan = lambda n=None, beta=None: plan_run(shaped(prob, n or 3000), "klt-multi-pass", 1.0, 1e-6, beta=beta, **small)
    fits = fitting_settings(prob, plan, limit, replan)
    assert {s.name for s in fits} >= {"T", "m", "n"}
    for s in fits:
        fitted = plan.tune(**s.overrides) if s.overrides else replan(**{s.name: s.value})
        assert estimate_work(prob, fitted).seconds <= limit, s
    t = next(s for s in fits if s.name == "T")                                       # the suggestion runs as suggested
    r = minimize(prob, "klt-multi-pass", epsilon=1.0, delta=1e-6, seed=0, max_seconds=limit, **small, **t.overrides)
    assert r.epsilon_spent <= 1.0

def test_python_default_is_no_limit():
    prob = get_problem("robust-regression", n=3000, d=4, seed=0)
    assert check_time(prob, plan_run(prob, "ztc", 1.0, 1e-6), None).seconds > 0

def test_cli_dry_run_prints_the_estimate(capsys):
    assert main(["run", "klt-multi-pass", "--epsilon", "1", "--delta", "1e-5", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "work (exact): about" in out and "would refuse it" in out and "Settings that fit" in out

def test_cli_refuses_over_the_limit_and_reports_work_in_json(tmp_path, capsys):
    assert main(["run", "klt-multi-pass", "--n", "2000", "--epsilon", "1", "--delta", "1e-5", "--max-seconds", "30"]) == 2
    err = capsys.readouterr().err
    assert "Settings that fit" in err and "--n " in err and "nothing was spent" in err
    out = tmp_path / "r.json"
    assert main(["run", "ztc", "--n", "3000", "--d", "4", "--epsilon", "1", "--delta", "1e-5", "--seed", "0", "--quiet",
                 "--out", str(out)]) == 0
    work = json.loads(out.read_text())["plan"]["work"]
    assert work["steps"] >= 1 and work["seconds"] > 0 and work["bound"] == "exact"

def test_a_long_run_says_its_estimate_before_it_starts(monkeypatch):
    "With a progress bar, a plan estimated over LONG_RUN seconds warns with the estimate before the run (the threshold set to 0 here)."
    import warnings
    import dpnotebooks.planning.minimize as mz
    from dpnotebooks.problems.base import get_problem
    p = get_problem("logistic", n=500, d=3, seed=0)
    monkeypatch.setattr(mz, "LONG_RUN", 0.0)
    with pytest.warns(UserWarning, match=r"dp-sgd: estimated .* on this machine \(\d+ steps\)"): mz.minimize(p, "dp-sgd", epsilon=1.0, delta=1e-5, seed=0, progress=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error"); mz.minimize(p, "dp-sgd", epsilon=1.0, delta=1e-5, seed=0)        # no progress bar: nothing said
