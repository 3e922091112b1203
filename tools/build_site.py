"""Build the documentation site offline: the notebooks executed, processed as nbdev does for docs, rendered to HTML.

Quarto (what `nbdev-docs` uses) cannot be installed on every machine, so this script builds the same pages with nbconvert:

- notebooks in sidebar order: index first, then the folders of nbs/ (core, privacy, algorithms, planning, audits,
  interface, experiments, tutorials), each in file-name order; the pages are flat (one per notebook stem);
- every notebook executed in its folder, cells marked `#| slow` included (the site is built in CI's slow tier, and this
  run is where those cells are checked; `--skip-slow` leaves them out); `#| eval: false` and `nbdev_export()` cells are
  never run; each build worker runs its pages in one kernel, reset before each page (`nb_run._FRESH`);
- nbdev's directives applied: `#| hide` cells and `#| default_exp` dropped, `#| echo: false` hides the input,
  `#| output: false` the output, directive lines removed, and a `show_doc` block after every exported symbol;
- figures inline (base64), math by a local MathJax (the `jupyter-server-mathjax` package, no CDN),
  links between notebooks rewritten to the pages, a sidebar on every page, no script loaded from the network.

    python tools/build_site.py [--out _site] [--jobs 2] [--only 21_sosp,index] [--no-execute] [--skip-slow] [--no-slow-pages]
                               [--reuse-built] [--keep-going] [--cell-timeout 900] [--cell-timing-min 20]

The fast test tier (tools/test.py) runs the checks of the notebooks without slow cells through this build (`--no-slow-pages
--keep-going`, cells stopped at 120 s); each page executed is recorded in `<out>/.built/` with the key of the sources it ran
from (`build_cache.source_key`), and the slow tier's build (`--reuse-built`) then executes the notebooks with slow cells, in
full, and any page whose sources changed: in CI every notebook runs once.

The build is four scripts of tools/ (not a package: one that imports the others puts its folder on sys.path first):

- tools/build_site.py (this one): the pages in sidebar order (`notebooks`), which of them to build, the worker processes
  that build them (`timed_render`), the report of times and failures, the command line;
- tools/nb_run.py: runs a notebook's cells in a Jupyter kernel, the kernel reused by a worker and reset before each page;
- tools/site_render.py: turns the executed notebook into its HTML page (directives, show_doc, sidebar, images, MathJax);
- tools/build_cache.py: the key of the sources and the `<out>/.built/` records that `--reuse-built` reads.
"""
from __future__ import annotations
import argparse, os, re, sys, time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

_TOOLS = str(Path(__file__).resolve().parent)     # tools/ is not a package: its scripts import each other from there,
if _TOOLS not in sys.path: sys.path.insert(0, _TOOLS)   # run as scripts or loaded by tests/tools_loader.py
import site_render, nb_run, build_cache     # site_render first: it keeps nbformat from loading rfc3987-syntax

ROOT = Path(__file__).resolve().parents[1]


GROUPS = ("core", "privacy", "problems", "engine", "algorithms", "planning", "audits", "interface", "experiments", "tutorials")   # the layers, in reading order


def notebooks(nbs: Path, only=None) -> list:
    "index.ipynb, then each folder's numbered notebooks of `nbs` in order (the sidebar order)."
    extra = sorted({p.parent.name for p in nbs.glob("*/*.ipynb")} - set(GROUPS) - {".ipynb_checkpoints"})
    if extra: raise SystemExit(f"nbs/ has folders the site does not know: {extra}. Add them to GROUPS in tools/build_site.py.")
    out = [nbs / "index.ipynb"] + [p for g in GROUPS for p in sorted((nbs / g).glob("*.ipynb")) if re.match(r"^\d", p.name)]
    return [p for p in out if not only or p.stem in only]


def build(out: Path, jobs: int = 2, only=None, run: bool = True, skip_slow: bool = False, reuse_built: bool = False,
          keep_going: bool = False, timeout: int = 900, timing_min: float | None = None, slow_pages: bool = True,
          root: Path = ROOT) -> list:
    """Build the pages into `out`; returns the names of the pages built. `reuse_built`: leave out the pages already there from
    the same sources (`source_key`; a page built with `skip_slow` counts only if it has no slow cell: the fast tier's build,
    reused by the slow tier's). `slow_pages=False`: leave out the notebooks with slow cells (the fast tier). `keep_going`:
    build every page even when one fails, print each failure and raise SystemExit(1) at the end (as a test run should).
    `timing_min`: print the cells slower than this. `root`: the project (its nbs/, its test flags, the sources of the key)."""
    import nbformat
    out.mkdir(parents=True, exist_ok=True)
    nbs = root / "nbs"
    paths = notebooks(nbs)
    pages = [(p.stem, site_render.title_of(nbformat.read(p, as_version=4)), "" if p.parent == nbs else p.parent.name) for p in paths]
    todo = [p for p in paths if not only or p.stem in only]
    if not slow_pages: todo = _without_slow(todo)
    key = build_cache.source_key(root) if run else None
    if reuse_built and run: todo = _not_built(todo, out, key, skip_slow)
    for p in todo: build_cache.forget(out, p)                      # not reusable until built again
    if run and not skip_slow: todo.sort(key=lambda p: -p.read_text().count("#| slow"))   # the longest first: the workers finish together
    site_render.copy_mathjax(out)
    flags = nb_run.run_flags(root, skip_slow) if run else set()
    timed = render_all([(p, out, pages, run, skip_slow, True, flags, timeout, key, keep_going) for p in todo], jobs)
    finish(out, paths, pages, root)
    report(timed, run, timing_min)
    return [n for n, _, _, _ in timed]


def finish(out: Path, paths: list, pages: list, root: Path = ROOT):
    "What every build ends with: a stub for each sidebar page not in `out` (how to build it), the API index and the search index."
    for p, (stem, title, _) in zip(paths, pages):
        if not (out / f"{stem}.html").exists(): site_render.stub(p, out, pages, title, build_cache.has_slow(p))
    site_render.api_page(root, out, pages)
    site_render.search_index(out)


def _without_slow(todo: list) -> list:
    "`todo` without the notebooks with slow cells (the fast tier), those listed."
    left = [p for p in todo if build_cache.has_slow(p)]; todo = [p for p in todo if p not in left]
    if left: print(f"{len(left)} notebooks with slow cells left out (the slow tier runs them): {', '.join(p.stem for p in left)}", flush=True)
    return todo


def _not_built(todo: list, out: Path, key: str, skip_slow: bool) -> list:
    "`todo` without the pages `out` already holds from the sources with `key` (`build_cache.built`), those listed."
    kept = [p for p in todo if build_cache.built(out, p, key, skip_slow)]
    if kept: print(f"{len(kept)} pages already built from these sources (reused): {', '.join(p.stem for p in kept)}", flush=True)
    return [p for p in todo if p not in kept]


def render_all(args: list, jobs: int) -> list:
    "`timed_render` of each tuple of `args`, in `jobs` worker processes (each with its reused kernel) or, with one job, here."
    if jobs > 1:                     # one BLAS thread per kernel unless set: `jobs` kernels with two each oversubscribe two cores
        for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"): os.environ.setdefault(k, "1")
        with ProcessPoolExecutor(jobs, initializer=_worker_init) as ex: return list(ex.map(timed_render, *zip(*args))) if args else []
    try: return [timed_render(*a) for a in args]
    finally: nb_run.shutdown_kernel()


def report(timed: list, run: bool, timing_min: float | None):
    "Print the slowest pages, the cells slower than `timing_min` and each failure; raise SystemExit(1) if a page failed."
    if run and timed:
        print("slowest pages (s):", ", ".join(f"{n} {t:.0f}" for n, t, _, _ in sorted(timed, key=lambda x: -x[1])[:12]), flush=True)
    if timing_min is not None:
        for n, _, _, cells in timed:
            for cid, sec in cells:
                if sec > timing_min: print(f"{n.removesuffix('.html')}.ipynb:{cid}: {sec:.1f} s (over {timing_min:g} s)")
    failed = [(n, err) for n, _, err, _ in timed if err]
    if failed:
        for n, err in failed: print(f"\n===== {n.removesuffix('.html')}.ipynb FAILED =====\n{err}", file=sys.stderr)
        print("\nNotebooks that failed:\n\t" + "\n\t".join(f"{n.removesuffix('.html')}.ipynb" for n, _ in failed), file=sys.stderr)
        raise SystemExit(1)


def _worker_init():
    "A build worker process: its reused kernel is stopped when the worker exits (multiprocessing runs its finalizers then)."
    from multiprocessing import util
    util.Finalize(None, nb_run.shutdown_kernel, exitpriority=10)


def timed_render(path: Path, out: Path, pages: list, run: bool, skip_slow: bool, reuse: bool, flags: set, timeout: int = 900,
                 key: str | None = None, keep_going: bool = False) -> tuple:
    """(page name, seconds to execute and render it, the error if it failed and `keep_going`, else None, cell times); a page
    executed from sources with `key` is recorded in `out/.built/` for `--reuse-built`. `flags`: `nb_run.run_flags`."""
    t0 = time.time()
    try: name, cells = render_page(path, out, pages, run, flags, reuse, timeout)
    except Exception as e:
        if not keep_going: raise
        return f"{path.stem}.html", time.time() - t0, re.sub(r"\x1b\[[0-9;]*m", "", f"{type(e).__name__}: {e}"), []
    if key: build_cache.record(out, path, key, skip_slow)
    return name, time.time() - t0, None, cells


def render_page(path: Path, out: Path, pages: list, run: bool, flags: set, reuse: bool = False, timeout: int = 900) -> tuple:
    "Execute (in this process's reused kernel if `reuse`), process and write one page; returns its file name and cell times."
    import nbformat
    nb = nbformat.read(path, as_version=4)
    if run: nb = nb_run.execute(nb, path, flags, reuse, timeout)
    times = nb_run.cell_seconds(nb) if run else []                # before the page drops the hidden cells
    return site_render.render(nb, path, out, pages), times


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "_site"), help="output folder (default _site)")
    ap.add_argument("--jobs", type=int, default=2, help="notebooks built in parallel (default 2)")
    ap.add_argument("--only", default=None, help="comma-separated notebook stems to build (default: all)")
    ap.add_argument("--no-execute", action="store_true", help="render the notebooks as stored (no outputs)")
    ap.add_argument("--skip-slow", action="store_true", help="do not run the cells marked `#| slow` (their outputs are left out)")
    ap.add_argument("--no-slow-pages", action="store_true", help="leave out the notebooks that have `#| slow` cells")
    ap.add_argument("--reuse-built", action="store_true", help="keep the pages already in --out from the same sources (see source_key)")
    ap.add_argument("--keep-going", action="store_true", help="build every page even if one fails; list the failures, exit 1")
    ap.add_argument("--cell-timeout", type=int, default=900, help="seconds a cell may run (default 900)")
    ap.add_argument("--cell-timing-min", type=float, default=None, help="print the cells slower than this many seconds")
    a = ap.parse_args(argv)
    t0 = time.time()
    names = build(Path(a.out), a.jobs, a.only.split(",") if a.only else None, not a.no_execute, a.skip_slow, a.reuse_built,
                  a.keep_going, a.cell_timeout, a.cell_timing_min, not a.no_slow_pages)
    print(f"built {len(names)} pages in {a.out} in {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
