"""Time and peak host memory of every registered algorithm through `minimize` (not a test: numbers to read).

    python benchmarks/bench_algorithms.py [--n 20000] [--d 10] [--backend numpy|cupy] [--out bench.json]

Each algorithm runs once at its recipe's defaults (tracemalloc slows the run, so compare seconds only between rows) (epsilon = 1, delta = 1e-5, alpha = 0.05, seed 0), after one
warm-up run at a small n. Reported: wall seconds, O2NC steps, steps per second, peak traced host memory (tracemalloc,
numpy backend only) and the plan's m.
"""
import argparse, json, time, tracemalloc
from dpnotebooks.backend import set_backend, get_backend
from dpnotebooks.minimize import minimize, ALGORITHMS
from dpnotebooks.problems import get_problem

SMALL = {"klt-multi-pass": dict(max_steps=200, m=64)}   # each multi-pass step reads all n samples

def bench(name, p, **kw):
    tracemalloc.start(); t0 = time.perf_counter()
    res = minimize(p, name, epsilon=1.0, delta=1e-5, alpha=0.05, seed=0, **SMALL.get(name, {}), **kw)
    sec = time.perf_counter() - t0; _, peak = tracemalloc.get_traced_memory(); tracemalloc.stop()
    plan = res.trace["plan"]
    return dict(algorithm=name, seconds=sec, steps=plan.T, steps_per_second=plan.T / sec, m=plan.m,
                peak_host_mib=peak / 2**20, n=len(p.data), d=p.dim)

def main():
    ap = argparse.ArgumentParser(); ap.add_argument("--n", type=int, default=20000); ap.add_argument("--d", type=int, default=10)
    ap.add_argument("--backend", default="numpy"); ap.add_argument("--out", default=None)
    a = ap.parse_args(); set_backend(a.backend)
    p = get_problem("robust-regression", n=a.n, d=a.d, seed=0)
    warm = get_problem("robust-regression", n=2000, d=a.d, seed=0)
    rows = []
    for name in ALGORITHMS:
        bench(name, warm if name != "klt-multi-pass" else get_problem("robust-regression", n=500, d=a.d, seed=0))
        rows.append(bench(name, p if name != "klt-multi-pass" else get_problem("robust-regression", n=2000, d=a.d, seed=0)))
        r = rows[-1]
        print(f"{name:16} n={r['n']:6d} d={r['d']:3d} T={r['steps']:6d} m={r['m']:5d} {r['seconds']:7.2f} s "
              f"{r['steps_per_second']:9.0f} steps/s  peak {r['peak_host_mib']:7.1f} MiB  ({get_backend()})", flush=True)
    if a.out: open(a.out, "w").write(json.dumps(rows, indent=1))

if __name__ == "__main__": main()
