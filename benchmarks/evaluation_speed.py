"""Wall time of the evaluation that experiments run after every private run: a Goldstein certificate (adaptive, k = 128) and
the loss on 20 000 held-out samples of `robust-regression`, with all-data averages taken over blocks of points (the default,
`problems.BLOCK_ELEMENTS` = 2^17 entries) and in one product (blocks large enough to hold every point), in turns.

    .venv/bin/python benchmarks/evaluation_speed.py [--repeat 7] [--d 8,16] [--beside-busy]
    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/evaluation_speed.py --beside-busy

`--beside-busy` runs the measurement beside a second process doing BLAS products on two threads, as the test suite's two
workers do: with two BLAS threads here too, two cores are oversubscribed; the second command shows one thread instead
(what tools/test.py gives its workers).

Nothing private is read: the points and the samples are synthetic. Median (q25-q75) seconds per certificate, the ratio, and
the largest difference between the two certificates' norms (rounding only: the products are the same, summed in other orders).
"""
import argparse, os, subprocess, sys, time
import numpy as np
from dpnotebooks.problems import base as problems
from dpnotebooks.experiments.sample_complexity import planted_robust_regression
from dpnotebooks.problems.stationarity import goldstein_certificate

def timed(block:int, ev, x) -> tuple:
    problems.BLOCK_ELEMENTS = block
    t = time.perf_counter(); c = goldstein_certificate(ev, x, 0.2, k=128, rng=1); ev.loss(c.points)
    return time.perf_counter() - t, c

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7); ap.add_argument("--d", default="8,16"); ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--beside-busy", action="store_true", help="measure beside a process doing BLAS products on two threads")
    a = ap.parse_args(argv)
    busy = None
    if a.beside_busy:
        busy = subprocess.Popen([sys.executable, "-c", "import numpy as np\na = np.random.rand(400, 400)\nwhile True: a @ a"],
                                env={**os.environ, "OPENBLAS_NUM_THREADS": "2", "OMP_NUM_THREADS": "2"})
        time.sleep(1)
    try: _measure(a)
    finally:
        if busy is not None: busy.kill()

def _measure(a):
    default, whole = problems.BLOCK_ELEMENTS, 1 << 62
    print("| d | points | blocks of 2^17 s | one product s | ratio | norm difference |\n|---|---|---|---|---|---|")
    for d in (int(s) for s in a.d.split(",")):
        ev = planted_robust_regression(a.n, d, 12345); x = np.full(d, 0.1)
        times, norms = {default: [], whole: []}, {}
        for _ in range(a.repeat):
            for block in (default, whole):
                s, c = timed(block, ev, x); times[block].append(s); norms[block] = c.norm
        q = {b: np.percentile(t, [50, 25, 75]) for b, t in times.items()}
        fmt = lambda v: f"{v[0]:.3f} ({v[1]:.3f}-{v[2]:.3f})"
        print(f"| {d} | {c.points.shape[0]} | {fmt(q[default])} | {fmt(q[whole])} | {q[whole][0] / q[default][0]:.2f} | "
              f"{abs(norms[default] - norms[whole]):.1e} |")
    problems.BLOCK_ELEMENTS = default

if __name__ == "__main__":
    main()
