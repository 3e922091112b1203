"""Seconds per step of KLT Alg. 4 (`KLTMultiPassOracle`) on its fast path (float32 directions, one product with the data
for a linear model: the default) against the reference path (`fast=False`), and the planned run time at the CLI's
defaults (issue 22 §7).

    .venv/bin/python benchmarks/multi_pass_speed.py            # n = 2000, d = 10, m = 988 (the CLI's plan at n = 2000)
    .venv/bin/python benchmarks/multi_pass_speed.py 500 3      # smaller n, fewer repeats

Each repeat times one period start and one increment per path, interleaved (fast, reference, fast, ...), on seeded
synthetic data (no private record); the medians and the quartiles are printed, then `estimate_work`'s seconds for the
default plans at n = 2000 and 20000 (which now time the fast path).
"""
import sys, time
import numpy as np
from threadpoolctl import threadpool_info
from dpnotebooks import get_problem, plan
from dpnotebooks.planning.cost import estimate_work, format_seconds
from dpnotebooks.core.streams import MultiPassView
from dpnotebooks.algorithms.zo_oracles import KLTMultiPassOracle

def step_seconds(problem, m:int, fast:bool, seed:int) -> tuple:
    "(period-start seconds, increment seconds) of one oracle on `problem` (Σ = 20, noise as the CLI plan's)."
    o = KLTMultiPassOracle(problem, MultiPassView(problem.data), 0.1, 20, m, 0.18, 0.04, 2.0, 0.12, rng=seed, fast=fast)
    z, out = np.zeros(problem.dim), []
    for t in (1, 2):
        t0 = time.perf_counter(); o(z + 0.01 * t, t); out.append(time.perf_counter() - t0)
    return tuple(out)

def main(n:int=2000, repeats:int=5, m:int=988, d:int=10):
    print(f"KLT Alg. 4 one step, n = {n}, d = {d}, m = {m}; BLAS: "
          + ", ".join(f"{i.get('internal_api')} {i.get('architecture', '')} x{i.get('num_threads')}" for i in threadpool_info()))
    for name in ("robust-regression", "relu-net"):
        p = get_problem(name, n=n, d=d, seed=0)
        times = {True: [], False: []}
        for r in range(repeats):
            for fast in (True, False): times[fast].append(step_seconds(p, m, fast, r))
        for which, k in (("period start", 0), ("increment", 1)):
            f, s = (np.array([t[k] for t in times[v]]) for v in (True, False))
            print(f"  {name:<18} {which:<13} reference {np.median(s):.3f} s [{np.quantile(s, .25):.3f}, {np.quantile(s, .75):.3f}]"
                  f"  fast {np.median(f):.3f} s [{np.quantile(f, .25):.3f}, {np.quantile(f, .75):.3f}]  speed-up {np.median(s) / np.median(f):.2f}x")
    for n_plan in (2000, 20000):
        p = get_problem("robust-regression", n=n_plan, d=d, seed=0)
        pl = plan(p, "klt-multi-pass", epsilon=1.0, delta=1e-5)
        print(f"  planned klt-multi-pass at n = {n_plan} (CLI defaults): T = {pl.params.T}, m = {pl.params.m}: "
              f"about {format_seconds(estimate_work(p, pl).seconds)} (fast path, this machine)")

if __name__ == "__main__":
    main(*[int(a) for a in sys.argv[1:3]])
