"""Run the tests, tier by tier: the notebooks' checks (nbdev-test) and pytest, each even when the other fails.

    .venv/bin/python tools/test.py                # the fast tier: what README's test command runs (a few minutes on 2 cores)
    .venv/bin/python tools/test.py --tier slow    # the slow tier (.ci/run adds it): the site build, which executes every
                                                  # notebook with its `#| slow` cells, then the tests marked slow
    .venv/bin/python tools/test.py --tier all     # both

Prints the time of each part and of the tier, pytest's 25 slowest tests (`--durations`), nbdev-test's time per notebook and
its cells slower than 20 s (a fast-tier cell is stopped at 120 s; none should pass 60 s); the exit status is 0 only when
every part passed. The slow tier builds the site into $DPNB_SITE (default _site/), and the site tests open that build.

Every part runs two worker processes; each gets one BLAS/OpenMP thread (`ONE_THREAD`, unless the variable is already set):
two workers with two BLAS threads each on two cores oversubscribe them, and OpenBLAS's threads then wait on each other
(a Goldstein certificate took 1.9 s instead of 0.2 s beside one busy process). Results do not depend on it: the seeded
outputs of tests/test_golden.py are the same either way.
"""
import argparse, json, os, re, subprocess, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SLOW = re.compile(r"^\s*#\s*\|\s*slow\b")
ONE_THREAD = dict(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")

def slow_notebooks() -> list:
    "The notebooks (file names) with at least one code cell marked `#| slow`."
    out = []
    for f in sorted((ROOT / "nbs").rglob("*.ipynb")):
        if any(p.startswith((".", "_")) for p in f.relative_to(ROOT / "nbs").parts): continue
        cells = json.loads(f.read_text(encoding="utf-8")).get("cells", [])
        src = lambda c: "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        if any(c["cell_type"] == "code" and any(SLOW.match(l) for l in src(c).splitlines()) for c in cells): out.append(f.name)
    return out

def parts(tier:str) -> list:
    "(name, argv, env) of the commands of a tier."
    pytest = [str(BIN / "python"), "-m", "pytest", "-n", "2", "--dist", "loadfile", "--durations=25", "-q", "tests"]
    nbdev = [str(BIN / "nbdev-test"), "--n-workers", "2", "--timing", "--cell-timing-min", "20", "--cell-timeout", "120"]
    fast = [("nbdev-test", nbdev, {}), ("pytest", pytest, {})]
    site = os.environ.get("DPNB_SITE") or str(ROOT / "_site")
    slow = [(f"site build (every notebook, {len(slow_notebooks())} with slow cells)",
             [str(BIN / "python"), str(ROOT / "tools" / "build_site.py"), "--out", site], {}),
            ("pytest -m slow", pytest + ["-m", "slow"], dict(DPNB_SITE=site))]
    return dict(fast=fast, slow=slow, all=fast + slow)[tier]

def run(tier:str) -> int:
    t0, results = time.time(), []
    for name, argv, env in parts(tier):
        print(f"\n===== {tier} tier: {name} =====\n+ {' '.join(argv)}", flush=True)
        t = time.time(); rc = subprocess.call(argv, cwd=ROOT, env={**ONE_THREAD, **os.environ, **env})
        if rc == 5 and name.startswith("pytest"): print("pytest collected no tests: that is a failure here")
        results.append((name, rc, time.time() - t))
    print(f"\n===== {tier} tier: {time.time() - t0:.0f} s =====")
    for name, rc, s in results: print(f"  {name:<26} {'passed' if rc == 0 else f'FAILED (exit {rc})':<18} {s:6.0f} s")
    return 0 if all(rc == 0 for _, rc, _ in results) else 1

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tier", choices=("fast", "slow", "all"), default="fast")
    sys.exit(run(ap.parse_args().tier))
