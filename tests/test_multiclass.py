"""k > 2 classes: `--problem logistic` is softmax cross-entropy (`Multinomial`) and `--problem mlp` has k outputs
(`SoftmaxMLP`; `DeepMLP` with more hidden layers), from a class list that is public schema (--classes, the held-out file, or a bundled dataset's own classes).
Every algorithm of the catalog runs on them or refuses with a message that names the algorithm and the fix."""
import json, warnings
import numpy as np
import pytest
from dpnotebooks.interface.cli import main
from dpnotebooks.planning.catalog import ALGORITHMS
from dpnotebooks.planning.minimize import minimize
from dpnotebooks.planning.cost import TooSlowError
from dpnotebooks.planning.request import RunRequest
from dpnotebooks.planning.dry_run import dry_run
from dpnotebooks.problems.base import get_problem
from dpnotebooks.problems.dataset import with_data
from dpnotebooks.engine.registry import InsufficientDataError
from dpnotebooks.algorithms.softmax_mlp import SoftmaxMLP
from dpnotebooks.algorithms.deep_mlp import DeepMLP

TEN = ",".join(map(str, range(10)))

def _k_class_problems():
    full = get_problem("multinomial", n=900, d=3, k=3, seed=0)
    lin = with_data(full, full.data[:600])
    return {"multinomial": lin, "softmax-mlp": SoftmaxMLP(lin.data, k=3, hidden=4, seed=0), "deep-mlp": DeepMLP(lin.data, (4, 3), k=3, seed=0)}, full.data[600:]

@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_every_algorithm_runs_or_refuses_clearly_on_k_classes(algorithm):
    problems, held = _k_class_problems()
    for name, p in problems.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try: res = minimize(p, algorithm, epsilon=2.0, delta=1e-5, seed=0, max_seconds=20)
            except (ValueError, InsufficientDataError, TooSlowError) as err:
                assert algorithm.replace("-nonprivate", "") in str(err), (name, str(err))      # the message names the algorithm
                continue
        assert np.all(np.isfinite(np.asarray(res.x))) and 0 <= p.score(res.x, held) <= 1
        if ALGORITHMS[algorithm].private: assert res.epsilon_spent <= 2.0 + 1e-9

@pytest.mark.parametrize("problem", ["logistic", "mlp"])
def test_ten_digits_from_the_cli(tmp_path, problem):
    "The bundled digits with their ten classes declared: softmax over 10 classes, far above chance (0.1) at ε = 4."
    out = tmp_path / "r.json"
    assert main(["run", "dp-sgd", "--problem", problem, "--data", "digits", "--classes", TEN, "--test-fraction", "0.3",
                 "--epsilon", "4", "--delta", "1e-5", "--seed", "0", "--quiet", "--out", str(out)]) == 0
    r = json.loads(out.read_text())
    assert r["data"]["labels"]["k"] == 10 and r["evaluation"]["accuracy_out"] > 0.6, r["evaluation"]
    assert r["d"] == (10 * 65 if problem == "logistic" else 64 * 32 + 32 + 10 + 32 * 10)

def test_a_dry_run_prices_the_k_class_model():
    text = dry_run(RunRequest("dp-sgd", "logistic", data="digits", classes=list(TEN.split(",")), epsilon=1.0, delta=1e-5))
    assert "d = 650\n" in text and "price: epsilon" in text
    assert dry_run(RunRequest("dp-sgd", "logistic", data="digits", epsilon=1.0, delta=1e-5)).splitlines()[0].endswith("d = 65")     # undeclared: 5-9 against 0-4

@pytest.mark.parametrize("model", ["multinomial", "softmax-mlp", "deep-mlp", "deep-mlp-binary"])
def test_the_strict_array_api_backend_gives_the_same_clipped_sums_and_run(model):
    "The GPU path's stand-in: on array-api-strict the fused clipped sum and a seeded DP-SGD run equal numpy's (a record labelled 7 zeroed on both)."
    from dpnotebooks.core.backend import use_backend, to_numpy
    from dpnotebooks.problems.dataset import Dataset
    from dpnotebooks.problems.multinomial import Multinomial
    pytest.importorskip("array_api_strict", reason="array-api-strict is in the [dev] extra")
    rs = np.random.default_rng(0); A = rs.normal(size=(300, 4)); A /= np.linalg.norm(A, axis=1, keepdims=True)
    y = rs.integers(0, 3, 300) * 1.0; y[3] = 7
    if model == "deep-mlp-binary": y = np.where(y > 0, 1.0, -1.0); y[3] = np.nan      # ±1 labels; a NaN label zeroed
    make = {"multinomial": lambda d: Multinomial(d, k=3), "softmax-mlp": lambda d: SoftmaxMLP(d, k=3, hidden=5, seed=0),
            "deep-mlp": lambda d: DeepMLP(d, (5, 3), k=3, seed=0), "deep-mlp-binary": lambda d: DeepMLP(d, (5, 3), seed=0)}[model]
    got = []
    for backend in ("numpy", "array-api-strict"):
        with use_backend(backend):
            p = make(Dataset(A, y)); s, c = p.clipped_sum(p.x0 + 0.1, p.data, 0.3)
            got.append((np.asarray(to_numpy(s), float), c.nonfinite, np.asarray(to_numpy(minimize(p, "dp-sgd", epsilon=1.0, delta=1e-5, seed=0).x), float)))
    (s0, n0, x0), (s1, n1, x1) = got
    assert n0 == n1 == 1 and np.allclose(s0, s1, rtol=1e-12, atol=1e-14) and np.allclose(x0, x1, rtol=1e-10, atol=1e-12)
