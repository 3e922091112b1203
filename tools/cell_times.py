"""Time every cell of notebooks as nbdev-test runs them (cells flagged `#| slow`, `#| notest`, `#| gpu` or `#| eval: false` skipped).

    .venv/bin/python tools/cell_times.py nbs/experiments/60_sample_complexity.ipynb [...] [--top 10] [--flags slow]

Prints each notebook's total and its slowest cells (index, id, seconds, first line). `--flags slow` also runs the slow cells
(the fast tier runs only the notebooks without them; `.ci/run`'s second tier runs the others in full). The fast tier
promises no cell over 60 s on CI's 2-core machine.
"""
import argparse, json, os, re, time
from pathlib import Path
from execnb.shell import CaptureShell

SKIP = ("notest", "slow", "gpu")

def flags(src:str) -> set:
    out = set()
    for line in src.splitlines():
        m = re.match(r"^\s*#\s*\|\s*(.+?)\s*$", line)
        if m: out.update(m.group(1).replace(":", " ").split())
    return out

def time_cells(path:Path, run_flags=()) -> list:
    "[(index, id, seconds, first line)] for each executed code cell of `path`, run in its own folder."
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    shell, old = CaptureShell(), os.getcwd()
    os.chdir(path.parent)
    try:
        shell.run_cell("import matplotlib; matplotlib.use('Agg')")
        out = []
        for i, c in enumerate(cells):
            if c["cell_type"] != "code": continue
            src = "".join(c["source"]); f = flags(src)
            if ({"eval", "false"} <= f) or any(s in f and s not in run_flags for s in SKIP) or "nbdev_export()" in src: continue
            t = time.perf_counter(); shell.run_cell(src)
            if shell.exc: raise RuntimeError(f"{path.name} cell {i} failed: {shell.exc}")
            out.append((i, c.get("id", ""), time.perf_counter() - t, src.strip().splitlines()[0][:70]))
        return out
    finally: os.chdir(old)

if __name__ == "__main__":
    ap = argparse.ArgumentParser(); ap.add_argument("notebooks", nargs="+"); ap.add_argument("--top", type=int, default=8)
    ap.add_argument("--flags", nargs="*", default=()); a = ap.parse_args()
    for nb in a.notebooks:
        res = time_cells(Path(nb).resolve(), tuple(a.flags))
        print(f"{nb}: {sum(r[2] for r in res):.1f} s in {len(res)} cells")
        for i, cid, s, first in sorted(res, key=lambda r: -r[2])[:a.top]: print(f"  [{i}] {cid} {s:6.1f} s  {first}")
