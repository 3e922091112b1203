"""Sizes of the exported cells (lines of code, directives left out): median, max, and the cells over a limit.

    python3 tools/cell_sizes.py [--over 20] [--list]
"""
import argparse, json, re, statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXPORT = re.compile(r"^\s*#\s*\|\s*export[si]?\s*$")

def exported_cells() -> list:
    "(notebook, cell id, lines) of every exported code cell in nbs/."
    out = []
    for f in sorted((ROOT / "nbs").rglob("*.ipynb")):
        for c in json.loads(f.read_text(encoding="utf-8"))["cells"]:
            src = "".join(c["source"]).splitlines()
            if c["cell_type"] == "code" and any(EXPORT.match(l) for l in src):
                body = [l for l in src if l.strip() and not l.lstrip().startswith("#|")]
                out.append((str(f.relative_to(ROOT / "nbs")), c.get("id", ""), len(body)))
    return out

if __name__ == "__main__":
    ap = argparse.ArgumentParser(); ap.add_argument("--over", type=int, default=20); ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    cells = exported_cells(); sizes = [n for _, _, n in cells]
    over = sorted((c for c in cells if c[2] > a.over), key=lambda c: -c[2])
    print(f"exported cells: {len(cells)}; median {statistics.median(sizes):g} lines; max {max(sizes)}; over {a.over}: {len(over)}")
    if a.list:
        for nb, cid, n in over: print(f"  {n:4d}  {nb} #{cid}")
