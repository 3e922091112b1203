"""Build the documentation site offline: the notebooks executed, processed as nbdev does for docs, rendered to HTML.

Quarto (what `nbdev-docs` uses) cannot be installed on every machine, so this script builds the same pages with nbconvert:

- notebooks in sidebar order: index first, then the folders of nbs/ (core, privacy, algorithms, planning, audits,
  interface, experiments, tutorials), each in file-name order; the pages are flat (one per notebook stem);
- every notebook executed in its folder, cells marked `#| slow` included (the site is built in CI's slow tier, and this
  run is where those cells are checked; `--skip-slow` leaves them out); `#| eval: false` and `nbdev_export()` cells are
  never run; each build worker runs its pages in one kernel, reset before each page (`_FRESH`);
- nbdev's directives applied: `#| hide` cells and `#| default_exp` dropped, `#| echo: false` hides the input,
  `#| output: false` the output, directive lines removed, and a `show_doc` block after every exported symbol;
- figures inline (base64), math by a local MathJax (the `jupyter-server-mathjax` package, no CDN),
  links between notebooks rewritten to the pages, a sidebar on every page, no script loaded from the network.

    python tools/build_site.py [--out _site] [--jobs 2] [--only 21_sosp,index] [--no-execute] [--skip-slow]
"""
from __future__ import annotations
import argparse, ast, html, importlib, os, re, shutil, sys, time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NBS = ROOT / "nbs"
DIRECTIVE = re.compile(r"^\s*#\|\s*(.*?)\s*$")
MATHJAX = "mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full"   # the configuration jupyter-server-mathjax ships


GROUPS = ("core", "privacy", "algorithms", "planning", "audits", "interface", "experiments", "tutorials")   # the layers, in reading order


def notebooks(only=None) -> list:
    "index.ipynb, then each folder's numbered notebooks in order (the sidebar order)."
    extra = sorted({p.parent.name for p in NBS.glob("*/*.ipynb")} - set(GROUPS) - {".ipynb_checkpoints"})
    if extra: raise SystemExit(f"nbs/ has folders the site does not know: {extra}. Add them to GROUPS in tools/build_site.py.")
    out = [NBS / "index.ipynb"] + [p for g in GROUPS for p in sorted((NBS / g).glob("*.ipynb")) if re.match(r"^\d", p.name)]
    return [p for p in out if not only or p.stem in only]


def directives(src: str) -> dict:
    "The `#| name value` lines of a cell, as {name: value}."
    out = {}
    for line in src.splitlines():
        m = DIRECTIVE.match(line)
        if m:
            name, _, value = m.group(1).partition(" ")
            out[name.rstrip(":")] = value.strip()
    return out


def strip_directives(src: str) -> str:
    return "\n".join(l for l in src.splitlines() if not DIRECTIVE.match(l)).strip("\n")


def title_of(nb) -> str:
    for c in nb.cells:
        if c.cell_type == "markdown":
            m = re.search(r"^#\s+(.+)$", c.source, re.M)
            if m: return m.group(1).replace('`', '').strip()
    return "dpnotebooks"


def exported_names(src: str) -> list:
    "Top-level functions, classes and assigned names of an exported cell, in order."
    try: tree = ast.parse(strip_directives(src))
    except SyntaxError: return []
    names = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)): names.append(node.name)
    return [n for n in names if not n.startswith("_")]


def show_doc_markdown(module: str, name: str) -> str | None:
    "nbdev's show_doc of `module.name` as plain markdown (Quarto attributes and the source link removed)."
    from nbdev.showdoc import show_doc
    obj = getattr(importlib.import_module(module), name, None)
    if obj is None: return None
    doc = getattr(obj, "__doc__", None) or ""
    cut = doc.find("\n\nParameters (from the comments in the signature):")   # the list `help()` shows; the table below has it
    try:
        if cut >= 0: obj.__doc__ = doc[:cut]
        md = show_doc(obj)._repr_markdown_()
    finally:
        if cut >= 0: obj.__doc__ = doc
    md = re.sub(r"^\[source\]\([^)]*\)\{[^}]*\}\s*$", "", md, flags=re.M)
    return re.sub(r"\]\(([^)]*)\)\{[^}]*\}", r"](\1)", md).strip()


def _stop_heartbeat(self, wait: float = 10.0):
    """`HBChannel.stop` that stops waiting for the heartbeat thread after `wait` seconds. At shutdown the thread can stay
    blocked on the dead kernel's socket, and the page build then hangs on its join forever (jupyter_client#771 reports such
    hangs in about 0.5% of shutdowns; on 2026-11-25 one held a CI site build on 01_privacy for 13 minutes). The thread is a
    daemon, so leaving it costs nothing; its socket is closed only once the thread has ended."""
    self._running = False
    self._exit.set()
    self.join(timeout=wait)
    if not self.is_alive(): self.close()


# Run before each page in a reused kernel (first line: the page's folder): a fresh namespace in the page's folder, with the
# warnings filters, environment, sys.path, matplotlib settings, dpnotebooks backend and JAX precision the kernel had before its
# first page (a build of every page in fresh kernels and one in reused kernels differed, before the last, in 04e_losses's JAX run).
_FRESH = r"""
import os as _o, sys as _s, copy as _c, warnings as _w
_o.chdir(_FOLDER)
if not hasattr(_s, "_dpnb_fresh"):
    import matplotlib.pyplot as _p, matplotlib as _m     # what a fresh kernel sets up on its first pyplot import, taken once
    with _w.catch_warnings():                           # tqdm.auto warns once a kernel, on import, that ipywidgets is missing:
        _w.simplefilter("ignore"); import tqdm.auto     # on no page, rather than on whichever page of a worker imports it first
    _s._dpnb_fresh = (list(_w.filters), dict(_o.environ), list(_s.path), _c.deepcopy(dict(_m.rcParams)))
else:
    _f = _s._dpnb_fresh
    _w.filters[:] = _f[0]; _w._filters_mutated()         # also forgets which warnings were shown (a fresh kernel shows them again)
    _o.environ.clear(); _o.environ.update(_f[1]); _s.path[:] = _f[2]
    import matplotlib.pyplot as _p, matplotlib as _m
    _p.close("all")                                     # the settings, then the kernel's inline backend, shown as it draws
    _m.rcParams.update({k: v for k, v in _c.deepcopy(_f[3]).items() if k not in ("backend", "interactive")})
    if "inline" not in _m.get_backend():               # a page's matplotlib.use("Agg") (50_cli's dpnb demo) hid later figures
        get_ipython().run_line_magic("matplotlib", "inline")
    if "dpnotebooks.backend" in _s.modules:
        _b = _s.modules["dpnotebooks.backend"]; _b.set_backend("numpy", "float64"); _b._backend_from_env()
    if "jax" in _s.modules:                             # from_jax turns float64 on for the process; a fresh kernel has JAX's default
        _s.modules["jax"].config.update("jax_enable_x64", _o.environ.get("JAX_ENABLE_X64", "").lower() in ("1", "true", "t", "y", "yes", "on"))
# A new __main__ and namespace, as `%reset` would, but the old one is left as it was: a function an earlier page defined and
# registered in the package (30_minimize's recipes) keeps its globals. One statement: IPython runs each in the current namespace.
(lambda ip: (ip.init_create_namespaces(), ip.init_user_ns()))(get_ipython())
"""

_KERNEL = {}   # this process's reused kernel: {"k": the NotebookClient that started it, with its km and kc}


def shutdown_kernel():
    "Stop this process's reused kernel, if any (at the end of a build, or when its worker process exits)."
    k = _KERNEL.pop("k", None)
    if not k: return
    from jupyter_core.utils import run_sync
    try:
        k.kc.stop_channels()
        run_sync(k.km.shutdown_kernel)(now=True)
    except Exception:
        try: k.km.provisioner.process.kill()
        except Exception: pass


def execute(nb, path: Path, skip_slow: bool = False, reuse: bool = False):
    """Run the notebook in its folder with nbclient; eval-false and `nbdev_export()` cells (and slow ones if asked) are skipped,
    their source kept. `reuse`: run it in this process's kernel, started once (about 2 s a page saved: a kernel's start and
    the package's import), after `_FRESH` has reset the namespace and the state pages change; a page that fails stops it."""
    import nbformat
    from nbclient import NotebookClient
    from jupyter_client.channels import HBChannel
    HBChannel.stop = _stop_heartbeat
    saved = {}
    for i, c in enumerate(nb.cells):
        if c.cell_type == "code":
            d = directives(c.source)
            # like nbdev-test: never run a notebook's `nbdev_export()` cell (two notebooks exporting at once race on the package files)
            if (skip_slow and "slow" in d) or d.get("eval") == "false" or "nbdev_export(" in c.source:
                saved[i], c.source = c.source, "pass"
    if reuse: nb.cells.insert(0, nbformat.v4.new_code_cell(f"_FOLDER = {str(path.parent)!r}" + _FRESH))
    k = _KERNEL.get("k") if reuse else None   # a one-off run never picks up the saved kernel
    client = NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}},
                            **({"km": k.km} if k else {}))
    if k: client.kc = k.kc
    try: client.execute(**({"cleanup_kc": False} if reuse else {}))
    except BaseException:
        if reuse: _KERNEL["k"] = client; shutdown_kernel()
        raise
    if reuse:
        _KERNEL["k"] = client
        del nb.cells[0]
    for i, src in saved.items():
        nb.cells[i].source, nb.cells[i].outputs = src, []
    return nb


def process(nb, module: str | None):
    "Apply nbdev's documentation directives and insert show_doc after exported symbols."
    import nbformat
    cells = []
    for c in nb.cells:
        if c.cell_type == "raw": continue
        if c.cell_type == "markdown":
            c.source = re.sub(r"\]\((?:[\w.-]+/)*([\w-]+?)\.ipynb(#[^)]*)?\)", lambda m: f"]({m.group(1)}.html{m.group(2) or ''})", c.source)
            cells.append(c); continue
        d = directives(c.source)
        if "hide" in d or "default_exp" in d: continue
        exported = any(k in d for k in ("export", "exports"))
        if "exporti" in d: continue
        c.source = strip_directives(c.source)
        if "echo" in d and d["echo"] == "false": c.metadata["jupyter"] = {"source_hidden": True}; c.source = ""
        if d.get("output") == "false": c.outputs = []
        if c.source or c.outputs: cells.append(c)
        if exported and module:
            for name in exported_names(c.source):
                md = show_doc_markdown(module, name)
                if md: cells.append(nbformat.v4.new_markdown_cell(md))
    nb.cells = cells
    return nb


def sidebar(pages: list, current: str) -> str:
    "The navigation: one heading per folder of nbs/, its pages below it."
    items, group = "", None
    for stem, title, g in pages:
        if g != group and g: items += f'<li class="group">{html.escape(g)}</li>'
        group = g
        items += f'<li{" class=active" if stem == current else ""}><a href="{stem}.html">{html.escape(title)}</a></li>'
    return (f'<nav id="dpnb-sidebar"><a class="brand" href="index.html">dpnotebooks</a><ul>{items}</ul></nav>')


STYLE = """<style>
#dpnb-sidebar{position:fixed;top:0;left:0;bottom:0;width:250px;overflow-y:auto;background:#f7f7f9;border-right:1px solid #ddd;
 padding:12px 10px;font:14px/1.35 system-ui,sans-serif;z-index:10}
#dpnb-sidebar .brand{font-weight:600;font-size:17px;display:block;margin-bottom:10px;color:#222;text-decoration:none}
#dpnb-sidebar ul{list-style:none;padding:0;margin:0}#dpnb-sidebar li{margin:3px 0}
#dpnb-sidebar li.active a{font-weight:600;color:#000}#dpnb-sidebar li.group{margin:12px 0 2px;font-size:12px;text-transform:uppercase;letter-spacing:.05em;color:#777}#dpnb-sidebar a{color:#2a5db0;text-decoration:none}
body{margin-left:270px !important}
</style>"""


_MD_IMAGE = re.compile(r"(!\[[^\]]*\]\()(?!\w+:|/|#)([\w./-]+\.(svg|png))\)")

def inline_images(nb, folder: Path):
    "Markdown images beside the notebook (`![...](results/x.svg)`) become data URIs: the site is one flat folder of pages."
    import base64
    mime = {"svg": "image/svg+xml", "png": "image/png"}
    def data_uri(m):
        f = folder / m.group(2)
        if not f.exists(): return m.group(0)          # left as is: the site test reports it as not loaded
        return f"{m.group(1)}data:{mime[m.group(3)]};base64,{base64.b64encode(f.read_bytes()).decode()})"
    for c in nb.cells:
        if c.cell_type == "markdown": c.source = _MD_IMAGE.sub(data_uri, c.source)


def render(path: Path, out: Path, pages: list, run: bool, skip_slow: bool = False, reuse: bool = False) -> str:
    "Execute (in this process's reused kernel if `reuse`), process and write one page; returns its file name."
    import nbformat
    from nbconvert import HTMLExporter
    nb = nbformat.read(path, as_version=4)
    default_exp = next((directives(c.source)["default_exp"] for c in nb.cells
                        if c.cell_type == "code" and "default_exp" in directives(c.source)), None)
    if run: nb = execute(nb, path, skip_slow, reuse)
    module = None if not default_exp else "dpnotebooks" if default_exp == "__init__" else f"dpnotebooks.{default_exp}"
    nb = process(nb, module)
    inline_images(nb, path.parent)
    exporter = HTMLExporter(template_name="lab", exclude_input_prompt=True, exclude_output_prompt=True, mathjax_url=MATHJAX)
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": title_of(nb)}})
    body = re.sub(r'<script[^>]*\bsrc="https?://[^"]*"[^>]*>\s*</script>', "", body)          # nothing from the network
    body = re.sub(r'<link[^>]*\bhref="https?://[^"]*"[^>]*>', "", body)
    body = body.replace("</head>", STYLE + "\n</head>", 1)
    body = re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + sidebar(pages, path.stem), body, count=1)
    name = f"{path.stem}.html"
    (out / name).write_text(body)
    return name


def copy_mathjax(out: Path):
    import jupyter_server_mathjax
    src = Path(jupyter_server_mathjax.__file__).parent / "static"
    if not (out / "mathjax").exists(): shutil.copytree(src, out / "mathjax")


def build(out: Path, jobs: int = 2, only=None, run: bool = True, skip_slow: bool = False) -> list:
    import nbformat
    out.mkdir(parents=True, exist_ok=True)
    paths = notebooks()
    pages = [(p.stem, title_of(nbformat.read(p, as_version=4)), "" if p.parent == NBS else p.parent.name) for p in paths]
    todo = [p for p in paths if not only or p.stem in only]
    if run and not skip_slow: todo.sort(key=lambda p: -p.read_text().count("#| slow"))   # the longest first: the workers finish together
    copy_mathjax(out)
    if jobs > 1:                     # one BLAS thread per kernel unless set: `jobs` kernels with two each oversubscribe two cores
        for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"): os.environ.setdefault(k, "1")
        with ProcessPoolExecutor(jobs, initializer=_worker_init) as ex:
            timed = list(ex.map(timed_render, todo, [out] * len(todo), [pages] * len(todo), [run] * len(todo), [skip_slow] * len(todo),
                                [True] * len(todo)))
    else:
        try: timed = [timed_render(p, out, pages, run, skip_slow, True) for p in todo]
        finally: shutdown_kernel()
    if run:
        print("slowest pages (s):", ", ".join(f"{n} {t:.0f}" for n, t in sorted(timed, key=lambda x: -x[1])[:12]), flush=True)
    return [n for n, _ in timed]


def _worker_init():
    "A build worker process: its reused kernel is stopped when the worker exits (multiprocessing runs its finalizers then)."
    from multiprocessing import util
    util.Finalize(None, shutdown_kernel, exitpriority=10)


def timed_render(path: Path, *args) -> tuple:
    "(page name, seconds to execute and render it)."
    t0 = time.time(); name = render(path, *args)
    return name, time.time() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "_site"), help="output folder (default _site)")
    ap.add_argument("--jobs", type=int, default=2, help="notebooks built in parallel (default 2)")
    ap.add_argument("--only", default=None, help="comma-separated notebook stems to build (default: all)")
    ap.add_argument("--no-execute", action="store_true", help="render the notebooks as stored (no outputs)")
    ap.add_argument("--skip-slow", action="store_true", help="do not run the cells marked `#| slow` (their outputs are left out)")
    a = ap.parse_args(argv)
    t0 = time.time()
    names = build(Path(a.out), a.jobs, a.only.split(",") if a.only else None, not a.no_execute, a.skip_slow)
    print(f"built {len(names)} pages in {a.out} in {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
