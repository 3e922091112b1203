"""Seeded runs of the current checkout against another git revision: wall time and whether the outputs are identical.

    .venv/bin/python benchmarks/revision_speed.py 3cb18e3 [--algorithms klt-first-order,ztc] [--repeat 5] [--n 20000] [--d 10]

The other revision is checked out into a temporary git worktree (removed afterwards) and imported from there; each run is one
subprocess (one warm-up run, then one timed run of `minimize` on `robust-regression`, ε = 1, δ = 1e-6, α = 0.1, seed 0),
the two revisions in turns, best of `--repeat`. A change meant to be a pure speed-up must print `same output: True`.
"""
import argparse, json, os, subprocess, sys, tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN = r'''
import json, sys, time, warnings
import numpy as np
warnings.simplefilter("ignore")
import dpnotebooks
from dpnotebooks.problems.base import get_problem
from dpnotebooks.planning.minimize import minimize
alg, n, d = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
p = get_problem("robust-regression", n=n, d=d, seed=0)
minimize(p, alg, epsilon=1.0, delta=1e-6, alpha=0.1, seed=0)
t = time.perf_counter(); r = minimize(p, alg, epsilon=1.0, delta=1e-6, alpha=0.1, seed=0); s = time.perf_counter() - t
print(json.dumps(dict(package=dpnotebooks.__file__, seconds=s, x=np.asarray(r.x).tolist())))
'''

def one(path:Path, alg:str, n:int, d:int) -> dict:
    "One timed run with the package at `path` first on sys.path (run from a neutral folder so the checkout is not imported)."
    env = dict(os.environ, PYTHONPATH=str(path))
    out = subprocess.run([sys.executable, "-c", RUN, alg, str(n), str(d)], env=env, cwd=tempfile.gettempdir(),
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("revision"); ap.add_argument("--algorithms", default="klt-first-order,klt-single-pass,ztc,dp-sgd")
    ap.add_argument("--repeat", type=int, default=5); ap.add_argument("--n", type=int, default=20000); ap.add_argument("--d", type=int, default=10)
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / "old"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(old), a.revision], check=True)
        try:
            print(f"| algorithm | {a.revision} s | this checkout s | speed-up | same output |\n|---|---|---|---|---|")
            for alg in a.algorithms.split(","):
                runs = {"old": [], "new": []}
                for _ in range(a.repeat):
                    runs["old"].append(one(old, alg, a.n, a.d)); runs["new"].append(one(ROOT, alg, a.n, a.d))
                assert all(str(old) in r["package"] for r in runs["old"]) and all(str(ROOT) in r["package"] for r in runs["new"])
                best = {k: min(r["seconds"] for r in v) for k, v in runs.items()}
                print(f"| {alg} | {best['old']:.3f} | {best['new']:.3f} | {best['old'] / best['new']:.2f}× | "
                      f"{runs['old'][0]['x'] == runs['new'][0]['x']} |", flush=True)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)], check=False)

if __name__ == "__main__":
    main()
