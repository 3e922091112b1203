"""Wall time of one noise calibration (`plan(...)`, no record read) for every registered private algorithm at n = 1e3 ... 1e6
(issues 21 §3 and 24 §2), every accountant cache cleared before each call.

    .venv/bin/python benchmarks/calibration_time.py                    # all algorithms, default accountant ('pld')
    .venv/bin/python benchmarks/calibration_time.py dp-sgd rdp         # one algorithm, the RDP accountant

The data are zeros of the right size: calibration depends only on n, d and the public constants. epsilon = 1, delta = 1e-5, d = 10.
An algorithm whose recipe refuses n (too few records for its theorem) prints 'refused'.
"""
import sys, time, warnings
import numpy as np
from dpnotebooks import get_problem, plan
from dpnotebooks.problems.dataset import Dataset
from dpnotebooks.planning.catalog import ALGORITHMS
from dpnotebooks.privacy import ledger, accounting as privacy; from dpnotebooks.planning import sosp_algorithm; from dpnotebooks.algorithms import sosp_erm, ganesh_sosp

PROBLEM = {"abggmu-spider": "sigmoid-glm", "abggmu-tree-spider": "sigmoid-glm", "lt-sosp": "sigmoid-glm", "lt-sosp-erm": "sigmoid-glm",
           "ganesh-sosp": "sigmoid-glm"}   # else logistic
SIZES = (1000, 10_000, 100_000, 1_000_000)

def clear():
    "Forget every memoized calibration and accountant query (the package's lru_caches)."
    for mod in (ledger, privacy, sosp_algorithm, sosp_erm, ganesh_sosp):
        for f in vars(mod).values():
            if callable(getattr(f, "cache_clear", None)): f.cache_clear()

def calibration_seconds(alg:str, n:int, accountant:str) -> str:
    p = get_problem(PROBLEM.get(alg, "logistic"), n=1000, d=10, seed=0)
    p.data = Dataset(np.zeros((n, p.data.p)), np.ones(n))
    clear(); t = time.perf_counter()
    try: plan(p, alg, epsilon=1.0, delta=1e-5, accountant=accountant, **({"rank": 2} if alg == "abggmu-glm" else {}))
    except Exception as err: return "refused" if "InsufficientData" in type(err).__name__ else type(err).__name__
    return f"{time.perf_counter() - t:.2f}"

if __name__ == "__main__":
    warnings.simplefilter("ignore")
    algs = [sys.argv[1]] if len(sys.argv) > 1 else [a for a in ALGORITHMS if "nonprivate" not in a]
    accountant = sys.argv[2] if len(sys.argv) > 2 else "pld"
    calibration_seconds("dp-sgd", 1000, accountant)                          # warm the imports once
    print("| algorithm | " + " | ".join(f"n = {n:.0e}" for n in SIZES) + " |   (seconds, accountant '" + accountant + "')")
    print("|---|" + "---|" * len(SIZES))
    for alg in algs: print(f"| {alg} | " + " | ".join(calibration_seconds(alg, n, accountant) for n in SIZES) + " |", flush=True)
