"""A user's own `Problem` class whose loss raises on one record (a label it indexes a table with) neither stops the run
nor names the record: `minimize` guards the class's per-record methods (`08b_faults.guard_records`), and two datasets
that differ in that record end alike, with the same ledger and no message (rules 1 and 3)."""
import warnings
import numpy as np
import pytest
from dpnotebooks.core.backend import get_xp
from dpnotebooks.planning.minimize import minimize
from dpnotebooks.problems.base import LinearModel, Problem
from dpnotebooks.problems.dataset import Dataset

class ClassWeighted(LinearModel):
    "A ramp loss with a public weight per class (1 or 2), read by the label as a table lookup would: an undeclared label raises IndexError."
    def _w(self, y):
        xp = get_xp(); i = xp.astype(y, xp.int64)
        if bool(xp.any((i < 0) | (i > 1))): raise IndexError("index 7 is out of bounds for axis 0 with size 2")
        return 1.0 + xp.astype(i == 1, y.dtype)
    def psi(self, t, y): s = 2 * y - 1; return self._w(y) * get_xp().clip(1 - s * t, 0.0, 1.0) / 2
    def dpsi(self, t, y): xp = get_xp(); s = 2 * y - 1; return -self._w(y) * s * xp.astype((s * t > 0) & (s * t < 1), t.dtype) / 2

class Picky(Problem):
    "A generic per-sample loss |<a, x> - y| whose gradients refuse a label above 1 (a ValueError from the user's own check)."
    def value(self, X, batch): return get_xp().abs(X @ batch.A.T - batch.y[None, :])
    def grad(self, X, batch):
        if bool(get_xp().any(batch.y > 1)): raise ValueError("label above 1")
        return get_xp().sign(X @ batch.A.T - batch.y[None, :])[..., None] * batch.A[None, :, :]
    def value_each(self, X, batch): return get_xp().abs(get_xp().sum(X * batch.A[:, None, :], axis=-1) - batch.y[:, None])
    def grad_each(self, X, batch):
        if bool(get_xp().any(batch.y > 1)): raise ValueError("label above 1")
        return get_xp().sign(get_xp().sum(X * batch.A[:, None, :], axis=-1) - batch.y[:, None])[..., None] * batch.A[:, None, :]

def _data(odd):
    rs = np.random.default_rng(0); A = rs.normal(size=(4000, 5)); A /= np.maximum(1, np.linalg.norm(A, axis=1, keepdims=True))
    y = (A[:, 0] > 0).astype(float)
    if odd is not None: y[1234] = odd
    return Dataset(A, y, "d")

@pytest.mark.parametrize("algorithm", ["dp-sgd", "klt-first-order", "klt-single-pass"])
@pytest.mark.parametrize("cls", [ClassWeighted, Picky])
def test_a_record_the_users_loss_raises_on_is_zeroed_and_the_run_ends_as_its_neighbours(cls, algorithm):
    runs = []
    for odd in (None, 7.0):
        p = cls(_data(odd), 5, L=1.0, x0=np.zeros(5))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always"); runs.append((minimize(p, algorithm, epsilon=2.0, delta=1e-6, seed=0), [str(w.message) for w in caught]))
    (a, wa), (b, wb) = runs
    assert a.ledger.to_dicts() == b.ledger.to_dicts() and a.samples_used == b.samples_used and wa == wb
    assert np.all(np.isfinite(b.x)) and np.abs(a.x - b.x).max() < 1.0

@pytest.mark.parametrize("cls", [ClassWeighted, Picky])
def test_the_guard_runs_on_every_backend(cls, backend):
    "On array-api-strict (an emulated device, strict indexing), torch and cupy where usable, the raising record is zeroed as on numpy."
    runs = [minimize(cls(_data(odd), 5, L=1.0, x0=np.zeros(5)), "dp-sgd", epsilon=2.0, delta=1e-6, seed=0) for odd in (None, 7.0)]
    assert runs[0].ledger.to_dicts() == runs[1].ledger.to_dicts() and np.all(np.isfinite(np.asarray(runs[1].x)))

def test_one_record_at_several_points_comes_back_whole():
    "A batch of one unreadable record, value at three points: a (3, 1) slice of NaN (the record's whole output), not (1, 1)."
    from dpnotebooks.engine.faults import guard_records
    p = guard_records(ClassWeighted(_data(7.0), 5, L=1.0, x0=np.zeros(5)))
    v = p.value(np.ones((3, 5)), p.data[1234:1235]); assert v.shape == (3, 1) and np.isnan(v).all()

def test_a_private_selection_scores_a_users_loss_without_stopping():
    "`tune` with the loss as its score: the validation split may hold the raising records; they are zeroed there too (the selection stopped, after spending, before)."
    from dpnotebooks.planning.tuning import tune
    runs = []
    for odd in (None, 7.0):
        ds = _data(None); y = np.asarray(ds.y).copy()
        if odd is not None: y[::50] = odd                                       # 80 raising records: some in each split
        p = ClassWeighted(Dataset(np.asarray(ds.A), y, "d"), 5, L=1.0, x0=np.zeros(5))
        runs.append(tune(p, "dp-sgd", {"epochs": [2, 4]}, 4.0, 1e-6, mean_runs=2, score="loss", when="always", seed=0))
    assert runs[0].epsilon_spent == runs[1].epsilon_spent and runs[1].x is not None and np.all(np.isfinite(runs[1].x))
