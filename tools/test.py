"""Run the tests, tier by tier: the notebooks' checks and pytest, each even when the other fails.

    .venv/bin/python tools/test.py                # the fast tier: what README's test command runs (a few minutes on 2 cores)
    .venv/bin/python tools/test.py --tier slow    # the slow tier (.ci/run adds it): the site build, which executes the
                                                  # notebooks with `#| slow` cells, then the tests marked slow, then the
                                                  # seeded-output, checkpoint and backend tests under another CPU's arithmetic
    .venv/bin/python tools/test.py --tier all     # both

The fast tier runs the notebooks that have no `#| slow` cell, as nbdev-test runs them (the cells flagged `notest` or `gpu`
and `#| eval: false` left out, every notebook even when one fails), through the site build (tools/build_site.py
--no-slow-pages --keep-going): each page is executed in a Jupyter kernel reset before it, as a fresh one, and rendered into
$DPNB_SITE (default _site/). The slow tier's build runs the notebooks with slow cells, in full, and reuses the fast tier's
pages where nothing they ran from has changed, so each notebook runs once in `.ci/run`; the site tests open that build.
`nbdev-test` runs every notebook's checks but the slow cells; `nbdev-test --flags slow` runs them all.

Prints the time of each part and of the tier, pytest's 25 slowest tests (`--durations`), the slowest pages and the cells
slower than 20 s (a fast-tier cell is stopped at 120 s; none should pass 60 s); the exit status is 0 only when every part
passed.

Every part runs two worker processes; each gets one BLAS/OpenMP thread (`ONE_THREAD`, unless the variable is already set):
two workers with two BLAS threads each on two cores oversubscribe them, and OpenBLAS's threads then wait on each other
(a Goldstein certificate took 1.9 s instead of 0.2 s beside one busy process). Results do not depend on it beyond
rounding: tests/test_golden.py compares the seeded outputs at the tolerance across machines of tests/golden/record.py, and
the slow tier's last part runs it, the checkpoint tests (bit for bit within a machine) and the backends' agreement under
`other_cpu()`: OpenBLAS's Prescott kernel, numpy without its AVX2/AVX-512 paths, one thread, a random hash seed.
"""
import argparse, os, subprocess, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
ONE_THREAD = dict(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")

def other_cpu() -> dict:
    """Another machine's arithmetic on this one: `dpnotebooks.core.backend.other_cpu_environment`, OpenBLAS's
    Prescott kernel, numpy's dispatched SIMD paths off, one thread and a random hash seed, so sums and products round in
    another order, as on another CPU."""
    from dpnotebooks.core.backend import other_cpu_environment
    return other_cpu_environment()

def parts(tier:str) -> list:
    "(name, argv, env) of the commands of a tier."
    pytest = [str(BIN / "python"), "-m", "pytest", "-n", "2", "--dist", "loadfile", "--durations=25", "-q", "tests"]
    site = os.environ.get("DPNB_SITE") or str(ROOT / "_site")
    build = [str(BIN / "python"), str(ROOT / "tools" / "build_site.py"), "--out", site, "--keep-going"]
    notebooks = build + ["--no-slow-pages", "--cell-timeout", "120", "--cell-timing-min", "20"]
    fast = [("notebooks (those without slow cells)", notebooks, {}), ("pytest", pytest, {})]
    if tier == "fast": return fast
    slow = [("site build (the notebooks with slow cells, in full; the pages the fast tier built from these sources reused)",
             build + ["--reuse-built"], {}),
            ("pytest -m slow", pytest + ["-m", "slow"], dict(DPNB_SITE=site)),
            ("pytest under another CPU's arithmetic (tools/test.py other_cpu): the seeded outputs and the backends' agreement",
             pytest[:-1] + ["tests/test_golden.py", "tests/test_array_api.py", "tests/test_checkpoint.py"], other_cpu())]
    return dict(fast=fast, slow=slow, all=fast + slow)[tier]

def precompile():
    """Byte-compile the package, the tests and the tools once. pip compiles what it installs, but not an editable package;
    where PYTHONDONTWRITEBYTECODE is set (as on these machines) every process that imports dpnotebooks (the kernels, the
    pytest workers, each `dpnb` a test starts) would compile it again: 0.3 s of its 1.8 s import. Stale files are ignored."""
    import compileall
    for d in ("dpnotebooks", "tests", "tools"): compileall.compile_dir(ROOT / d, quiet=1)

def run(tier:str) -> int:
    t0, results = time.time(), []
    precompile()
    for name, argv, env in parts(tier):
        print(f"\n===== {tier} tier: {name} =====\n+ {' '.join(argv)}", flush=True)
        if env: print("  with " + " ".join(f"{k}={v!r}" for k, v in env.items()), flush=True)
        t = time.time(); rc = subprocess.call(argv, cwd=ROOT, env={**ONE_THREAD, **os.environ, **env})
        if rc == 5 and name.startswith("pytest"): print("pytest collected no tests: that is a failure here")
        results.append((name, rc, time.time() - t))
    print(f"\n===== {tier} tier: {time.time() - t0:.0f} s =====")
    w = max(len(name) for name, _, _ in results)
    for name, rc, s in results: print(f"  {name:<{w}} {'passed' if rc == 0 else f'FAILED (exit {rc})':<18} {s:6.0f} s")
    return 0 if all(rc == 0 for _, rc, _ in results) else 1

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tier", choices=("fast", "slow", "all"), default="fast")
    sys.exit(run(ap.parse_args().tier))
