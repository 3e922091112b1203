"""Wall time of one noise calibration (`plan(...)`, no record read) for an algorithm at n = 1e3 ... 1e6 (issue 21 §3).

    .venv/bin/python benchmarks/calibration_time.py ALGORITHM PROBLEM      # e.g. dp-sgd logistic, abggmu-spider sigmoid-glm

The data are zeros of the right size: calibration depends only on n, d and the public constants. epsilon = 1, delta = 1e-5, d = 10.
"""
import sys, time, warnings
import numpy as np
from dpnotebooks import get_problem, plan
from dpnotebooks.problems import Dataset

if __name__ == "__main__":
    warnings.simplefilter("ignore")
    alg, prob = sys.argv[1], sys.argv[2]
    extra = {"rank": 2} if alg == "abggmu-glm" else {}
    for n in (1000, 10_000, 100_000, 1_000_000):
        p = get_problem(prob, n=1000, d=10, seed=0)
        p.data = Dataset(np.zeros((n, p.data.p)), np.ones(n))
        t = time.perf_counter()
        try: plan(p, alg, epsilon=1.0, delta=1e-5, **extra); print(f"{alg} n={n}: {time.perf_counter() - t:.2f} s", flush=True)
        except Exception as err: print(f"{alg} n={n}: {type(err).__name__}: {str(err)[:100]}", flush=True)
