"""Which pages of a site build are already there from the current sources, for `--reuse-built`.

Each page executed is recorded in `<out>/.built/<stem>.json` with the key of the sources it ran from (`source_key`) and
whether its slow cells ran; `built` reads a record back, `complete` checks every page. The fast test tier's build records
its pages, and the slow tier's build (`--reuse-built`) then executes only the notebooks with slow cells, in full, and any
page whose sources changed: in CI every notebook runs once.
"""
from __future__ import annotations
import os, sys
from pathlib import Path

_TOOLS = str(Path(__file__).resolve().parent)     # tools/ is not a package: its scripts import each other from there,
if _TOOLS not in sys.path: sys.path.insert(0, _TOOLS)   # run as scripts or loaded by tests/tools_loader.py
from site_render import directives


def source_key(root: Path) -> str:
    """What a page's outputs depend on besides its own cells: every file of the repository at `root` that git would track
    (the notebooks, the package, the tools, the data they read), the interpreter, the installed distributions and the
    `DPNB_` settings of the environment. A page built from the same key is not built again with `--reuse-built`."""
    import hashlib, platform, subprocess
    from importlib import metadata
    try:
        files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                               capture_output=True, check=True).stdout.decode().split("\0")
    except (OSError, subprocess.CalledProcessError):                        # not a git checkout: the folders pages read
        files = [str(f.relative_to(root)) for d in ("nbs", "dpnotebooks", "tools", "tests", "benchmarks") for f in (root / d).rglob("*")
                 if f.is_file() and "__pycache__" not in f.parts] + [f.name for f in root.iterdir() if f.is_file()]
    h = hashlib.sha256()
    for f in sorted(set(files) - {""}):
        if (root / f).is_file(): h.update(f.encode() + b"\0" + (root / f).read_bytes() + b"\0")
    import sysconfig                                                      # the environment's packages, whatever sys.path holds
    site = sorted({sysconfig.get_paths()[k] for k in ("purelib", "platlib")})
    dists = sorted({f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions(path=site)})
    env = sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith("DPNB_") and k != "DPNB_SITE")
    h.update("\n".join([sys.version, platform.platform(), *dists, *env]).encode())
    return h.hexdigest()


def _record(out: Path, path: Path) -> Path: return out / ".built" / f"{path.stem}.json"

def record(out: Path, path: Path, key: str, skip_slow: bool = False):
    "Record the page of `path` as executed from sources with `key` (complete unless `skip_slow` left slow cells out)."
    import json
    _record(out, path).parent.mkdir(exist_ok=True); _record(out, path).write_text(json.dumps(
        {"key": key, "complete": not (skip_slow and has_slow(path))}))

def forget(out: Path, path: Path): _record(out, path).unlink(missing_ok=True)          # not reusable until built again

def has_slow(path: Path) -> bool: return any("slow" in directives(c) for c in _code_sources(path))

def _code_sources(path: Path) -> list:
    import json
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]

def built(out: Path, path: Path, key: str, skip_slow: bool = False) -> bool:
    "Whether `out` holds the page of `path` executed from sources with this `key` (and its slow cells, unless `skip_slow`)."
    import json
    try: rec = json.loads(_record(out, path).read_text())
    except (OSError, ValueError): return False
    return rec.get("key") == key and (rec.get("complete") or skip_slow) and (out / f"{path.stem}.html").exists()

def complete(out: Path, paths: list, root: Path) -> bool:
    "Whether `out` holds the page of every notebook of `paths`, executed with its slow cells, from the current sources at `root`."
    key = source_key(root)
    return all(built(out, p, key) for p in paths)
