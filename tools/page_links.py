"""Each notebook's title cell ends with a link to its page with outputs in _site/ (the notebooks are stored without outputs).

    python tools/page_links.py [--check]

Writes the line `Its page with outputs: [_site/STEM.html](../../_site/STEM.html) ...` at the end of the first markdown cell of
every numbered notebook of nbs/ (replacing an older one); `--check` only reports the notebooks whose line is missing or stale
(tests/test_site_links.py runs it). tools/site_render.py leaves the line out of the page itself.
"""
from __future__ import annotations
import json, re, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINE = re.compile(r"\n*^Its page with outputs: .*$", re.M)


def link_line(nb_path: Path) -> str:
    stem = nb_path.stem
    return (f"Its page with outputs: [_site/{stem}.html](../../_site/{stem}.html) (the test command builds it, "
            f"or `python tools/build_site.py --only {stem}`).")


def notebooks(root: Path = ROOT) -> list:
    return sorted(p for p in (root / "nbs").glob("*/*.ipynb") if re.match(r"^\d", p.name))


def fixed(nb: dict, nb_path: Path) -> dict | None:
    "The notebook with its title cell's link line current, or None if it already is."
    cell = next(c for c in nb["cells"] if c["cell_type"] == "markdown")
    src = "".join(cell["source"]); new = LINE.sub("", src).rstrip("\n") + "\n\n" + link_line(nb_path)
    if new == src: return None
    lines = new.split("\n"); cell["source"] = [l + "\n" for l in lines[:-1]] + [lines[-1]]
    return nb


def main(argv=None) -> int:
    check = "--check" in (argv if argv is not None else sys.argv[1:])
    stale = []
    for p in notebooks():
        nb = json.loads(p.read_text())
        if fixed(nb, p) is None: continue
        stale.append(p.relative_to(ROOT))
        if not check: p.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    if check and stale: print("notebooks without their page link (run python tools/page_links.py):", *stale, sep="\n  "); return 1
    print(f"{'checked' if check else 'updated'} {len(notebooks())} notebooks; {'stale' if check else 'changed'}: {len(stale)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
