"""Start-up cost (issue 46 §4): the wall time of `import dpnotebooks` and of `dpnb --help`, each in a fresh interpreter,
beside an empty interpreter and `import numpy, scipy.special` (what the package cannot avoid loading).

    .venv/bin/python benchmarks/import_time.py [--repeat 15] [--out benchmarks/import_time_results.md]

The commands run in turns (interleaved repeats), so that a busy machine slows them alike; the table gives the median
and quartiles. The packages the import leaves out (dp-accounting, scipy.stats, torch, jax, ...) are checked by
tests/test_import_cost.py, which asserts which modules load, never a time.
"""
import argparse, os, platform, shutil, statistics, subprocess, sys, time
from pathlib import Path

PY = sys.executable
DPNB = shutil.which("dpnb", path=str(Path(PY).parent)) or "dpnb"
COMMANDS = {"python -c pass": [PY, "-c", "pass"],
            "import numpy, scipy.special": [PY, "-c", "import numpy, scipy.special"],
            "import dpnotebooks": [PY, "-c", "import dpnotebooks"],
            "dpnb --help": [DPNB, "--help"]}

def cpu() -> str:
    "The CPU's model name where /proc/cpuinfo says it, else the platform's."
    try: return next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except (OSError, StopIteration): return platform.processor() or platform.machine()

def seconds(cmd:list) -> float:
    t = time.perf_counter(); subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL); return time.perf_counter() - t

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15); ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    for cmd in COMMANDS.values(): seconds(cmd)                        # warm the file cache once
    times = {k: [] for k in COMMANDS}
    for _ in range(a.repeat):
        for k, cmd in COMMANDS.items(): times[k].append(seconds(cmd))
    rows = ["| command | median s | quartiles s |", "|---|---|---|"]
    for k, v in times.items():
        q = statistics.quantiles(v, n=4)
        rows.append(f"| `{k}` | {statistics.median(v):.3f} | {q[0]:.3f} – {q[2]:.3f} |")
    head = (f"Start-up times, {a.repeat} interleaved repeats, fresh interpreters. Machine: {cpu()}, "
            f"{os.cpu_count()} CPUs, Python {platform.python_version()}. Command: `python benchmarks/import_time.py --repeat {a.repeat}`.")
    text = head + "\n\n" + "\n".join(rows) + "\n"
    print(text)
    if a.out: Path(a.out).write_text("# Start-up time\n\n" + text)

if __name__ == "__main__": main()
