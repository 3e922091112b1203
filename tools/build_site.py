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

    python tools/build_site.py [--out _site] [--jobs 2] [--only 21_sosp,index] [--no-execute] [--skip-slow] [--no-slow-pages]
                               [--reuse-built] [--keep-going] [--cell-timeout 900] [--cell-timing-min 20]

The fast test tier (tools/test.py) runs the checks of the notebooks without slow cells through this build (`--no-slow-pages
--keep-going`, cells stopped at 120 s); each page executed is recorded in `<out>/.built/` with the key of the sources it ran
from (`source_key`), and the slow tier's build (`--reuse-built`) then executes the notebooks with slow cells, in full, and any
page whose sources changed: in CI every notebook runs once.
"""
from __future__ import annotations
import argparse, ast, html, importlib, os, re, shutil, sys, time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

# nbformat imports jsonschema, which imports its optional IRI-format checker, rfc3987-syntax, if installed (jupyter-server-
# mathjax's dependencies bring it): that module builds a grammar on import, 2.7 s of nbformat's 3.9 s here, in every process
# that reads a notebook. No notebook schema uses that format, so it is not loaded (jsonschema then leaves the format out).
sys.modules.setdefault("rfc3987_syntax", None)

ROOT = Path(__file__).resolve().parents[1]
NBS = ROOT / "nbs"
DIRECTIVE = re.compile(r"^\s*#\|\s*(.*?)\s*$")
MATHJAX = "mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full"   # the configuration jupyter-server-mathjax ships


GROUPS = ("core", "privacy", "problems", "engine", "algorithms", "planning", "audits", "interface", "experiments", "tutorials")   # the layers, in reading order


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
    if "dpnotebooks.core.backend" in _s.modules:
        _b = _s.modules["dpnotebooks.core.backend"]; _b.set_backend("numpy", "float64"); _b._backend_from_env()
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


def test_flags() -> set:
    "nbdev's `tst_flags` (pyproject.toml): cells with these directives nbdev-test leaves out unless asked (`slow` among them)."
    import tomllib
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text()).get("tool", {}).get("nbdev", {})
    return set(str(cfg.get("tst_flags", "")).split())


def execute(nb, path: Path, skip_slow: bool = False, reuse: bool = False, timeout: int = 900):
    """Run the notebook in its folder with nbclient; eval-false and `nbdev_export()` cells, and those with a test flag but
    `slow` (all of them with `skip_slow`, as nbdev-test), are skipped, their source kept. `reuse`: run it in this process's
    kernel, started once (about 2 s a page saved: a kernel's start and the package's import), after `_FRESH` has reset the
    namespace and the state pages change; a page that fails stops it. `timeout`: seconds a cell may run."""
    import nbformat
    from nbclient import NotebookClient
    from jupyter_client.channels import HBChannel
    HBChannel.stop = _stop_heartbeat
    saved, flags = {}, test_flags() - ({"slow"} if not skip_slow else set())
    for i, c in enumerate(nb.cells):
        if c.cell_type == "code":
            d = directives(c.source)
            # like nbdev-test: never run a notebook's `nbdev_export()` cell (two notebooks exporting at once race on the package files)
            if flags & d.keys() or d.get("eval") == "false" or "nbdev_export(" in c.source:
                saved[i], c.source = c.source, "pass"
    if reuse: nb.cells.insert(0, nbformat.v4.new_code_cell(f"_FOLDER = {str(path.parent)!r}" + _FRESH))
    k = _KERNEL.get("k") if reuse else None   # a one-off run never picks up the saved kernel
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}},
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


def cell_seconds(nb) -> list:
    "(cell id, seconds) of each executed code cell, from the timestamps nbclient records."
    from datetime import datetime
    out = []
    for c in nb.cells:
        t = c.get("metadata", {}).get("execution", {})
        if c.cell_type == "code" and "iopub.status.busy" in t and "shell.execute_reply" in t:
            dt = datetime.fromisoformat(t["shell.execute_reply"].replace("Z", "+00:00")) - datetime.fromisoformat(t["iopub.status.busy"].replace("Z", "+00:00"))
            out.append((c.get("id", "?"), dt.total_seconds()))
    return out


class _Highlighted(str):
    "A code cell's source as pygments highlighted it: the text escaped into spans, nothing a sanitizer would change."


class _PageHighlighter:
    "The `highlight_code` filter, pointed at each page's language in turn (`lexer_for`) without touching the exporter's traits."
    def lexer_for(self, nb):
        from nbconvert.filters.highlight import Highlight2HTML
        info = nb.metadata.get("language_info", {})
        self.hl = Highlight2HTML(pygments_lexer=info.get("pygments_lexer", info.get("name")))
    def __call__(self, source, *a, **k): return _Highlighted(self.hl(source, *a, **k))


_NO_ALT = 'alt="No description has been provided for this image"'
_FOCUSABLE = re.compile(r'(<div class="(?:[^"]*\s)?(?:jp-Cell-inputWrapper|jp-OutputArea-output)(?:\s[^"]*)?"(?![^>]*\btabindex=)[^>]*?)(/?)>')
_IMG_NO_ALT = re.compile(r'(<img(?![^>]*\balt=)[^>]*?)(/?)>')

def _accessible(page: str) -> str:
    """What nbconvert's HTMLExporter adds after rendering (an alt text on images without one, `tabindex="0"` on code inputs and
    outputs), by two substitutions instead of its BeautifulSoup pass over the whole page (a third of a page's rendering time).
    tests/test_site_render.py checks that the page, parsed as that pass parses it, is nbconvert's page."""
    page = _IMG_NO_ALT.sub(lambda m: f"{m.group(1)} {_NO_ALT}{m.group(2)}>", page)
    return _FOCUSABLE.sub(lambda m: f'{m.group(1)} tabindex="0"{m.group(2)}>', page)


def _exporter(nb):
    """This process's HTML exporter (the lab template, its Jinja environment built once per process), set to highlight `nb`'s
    language. Code input skips nbconvert's `clean_html` (bleach), about a third of the time it spends on a page: pygments
    escapes the source, so sanitizing its spans changes nothing (tests/test_site_render.py compares). The template's other
    uses of `clean_html` are left as they are. Its `from_notebook_node` is HTMLExporter's with `_accessible` in place of the
    BeautifulSoup pass; the filters stay the same object, so the template is compiled once, not once a page."""
    from nbconvert import HTMLExporter
    from nbconvert.exporters.templateexporter import TemplateExporter
    from nbconvert.filters import clean_html
    from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter

    class PageExporter(HTMLExporter):
        def from_notebook_node(self, nb, resources=None, **kw):
            resources = self._init_resources(resources)
            self.register_filter("highlight_code", self.filters["highlight_code"])
            self.register_filter("filter_data_type", WidgetsDataTypeFilter(notebook_metadata=self._nb_metadata, parent=self,
                                                                           resources=resources))
            page, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
            return _accessible(page), resources

    if "exporter" not in _EXPORTER:
        filters = {"highlight_code": _PageHighlighter(),
                   "clean_html": lambda s: s if isinstance(s, _Highlighted) else clean_html(s)}
        _EXPORTER["exporter"] = PageExporter(template_name="lab", exclude_input_prompt=True, exclude_output_prompt=True,
                                             mathjax_url=MATHJAX, filters=filters)
    _EXPORTER["exporter"].filters["highlight_code"].lexer_for(nb)
    return _EXPORTER["exporter"]

_EXPORTER = {}


def render(path: Path, out: Path, pages: list, run: bool, skip_slow: bool = False, reuse: bool = False, timeout: int = 900) -> tuple:
    "Execute (in this process's reused kernel if `reuse`), process and write one page; returns its file name and cell times."
    import nbformat
    nb = nbformat.read(path, as_version=4)
    default_exp = next((directives(c.source)["default_exp"] for c in nb.cells
                        if c.cell_type == "code" and "default_exp" in directives(c.source)), None)
    if run: nb = execute(nb, path, skip_slow, reuse, timeout)
    times = cell_seconds(nb) if run else []
    module = None if not default_exp else "dpnotebooks" if default_exp == "__init__" else f"dpnotebooks.{default_exp}"
    nb = process(nb, module)
    inline_images(nb, path.parent)
    body, _ = _exporter(nb).from_notebook_node(nb, resources={"metadata": {"name": title_of(nb)}})
    body = re.sub(r'<script[^>]*\bsrc="https?://[^"]*"[^>]*>\s*</script>', "", body)          # nothing from the network
    body = re.sub(r'<link[^>]*\bhref="https?://[^"]*"[^>]*>', "", body)
    body = body.replace("</head>", STYLE + "\n</head>", 1)
    body = re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + sidebar(pages, path.stem), body, count=1)
    name = f"{path.stem}.html"
    (out / name).write_text(body)
    return name, times


def copy_mathjax(out: Path):
    import jupyter_server_mathjax
    src = Path(jupyter_server_mathjax.__file__).parent / "static"
    if not (out / "mathjax").exists(): shutil.copytree(src, out / "mathjax")


def source_key() -> str:
    """What a page's outputs depend on besides its own cells: every file of the repository that git would track (the
    notebooks, the package, the tools, the data they read), the interpreter, the installed distributions and the `DPNB_`
    settings of the environment. A page built from the same key is not built again with `--reuse-built`."""
    import hashlib, platform, subprocess
    from importlib import metadata
    try:
        files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                               capture_output=True, check=True).stdout.decode().split("\0")
    except (OSError, subprocess.CalledProcessError):                        # not a git checkout: the folders pages read
        files = [str(f.relative_to(ROOT)) for d in ("nbs", "dpnotebooks", "tools", "tests", "benchmarks") for f in (ROOT / d).rglob("*")
                 if f.is_file() and "__pycache__" not in f.parts] + [f.name for f in ROOT.iterdir() if f.is_file()]
    h = hashlib.sha256()
    for f in sorted(set(files) - {""}):
        if (ROOT / f).is_file(): h.update(f.encode() + b"\0" + (ROOT / f).read_bytes() + b"\0")
    import sysconfig                                                      # the environment's packages, whatever sys.path holds
    site = sorted({sysconfig.get_paths()[k] for k in ("purelib", "platlib")})
    dists = sorted({f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions(path=site)})
    env = sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith("DPNB_") and k != "DPNB_SITE")
    h.update("\n".join([sys.version, platform.platform(), *dists, *env]).encode())
    return h.hexdigest()


def _record(out: Path, path: Path) -> Path: return out / ".built" / f"{path.stem}.json"

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

def complete(out: Path) -> bool:
    "Whether `out` holds every page, executed with its slow cells, from the current sources."
    key = source_key()
    return all(built(out, p, key) for p in notebooks())


def build(out: Path, jobs: int = 2, only=None, run: bool = True, skip_slow: bool = False, reuse_built: bool = False,
          keep_going: bool = False, timeout: int = 900, timing_min: float | None = None, slow_pages: bool = True) -> list:
    """Build the pages into `out`; returns the names of the pages built. `reuse_built`: leave out the pages already there from
    the same sources (`source_key`; a page built with `skip_slow` counts only if it has no slow cell: the fast tier's build,
    reused by the slow tier's). `slow_pages=False`: leave out the notebooks with slow cells (the fast tier). `keep_going`:
    build every page even when one fails, print each failure and raise SystemExit(1) at the end (as a test run should).
    `timing_min`: print the cells slower than this."""
    import nbformat
    out.mkdir(parents=True, exist_ok=True)
    paths = notebooks()
    pages = [(p.stem, title_of(nbformat.read(p, as_version=4)), "" if p.parent == NBS else p.parent.name) for p in paths]
    todo = [p for p in paths if not only or p.stem in only]
    if not slow_pages:
        left = [p for p in todo if has_slow(p)]; todo = [p for p in todo if p not in left]
        if left: print(f"{len(left)} notebooks with slow cells left out (the slow tier runs them): {', '.join(p.stem for p in left)}", flush=True)
    key = source_key() if run else None
    if reuse_built and run:
        kept = [p for p in todo if built(out, p, key, skip_slow)]
        todo = [p for p in todo if p not in kept]
        if kept: print(f"{len(kept)} pages already built from these sources (reused): {', '.join(p.stem for p in kept)}", flush=True)
    for p in todo: _record(out, p).unlink(missing_ok=True)          # not reusable until built again
    if run and not skip_slow: todo.sort(key=lambda p: -p.read_text().count("#| slow"))   # the longest first: the workers finish together
    copy_mathjax(out)
    args = [(p, out, pages, run, skip_slow, True, timeout, key, keep_going) for p in todo]
    if jobs > 1:                     # one BLAS thread per kernel unless set: `jobs` kernels with two each oversubscribe two cores
        for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"): os.environ.setdefault(k, "1")
        with ProcessPoolExecutor(jobs, initializer=_worker_init) as ex: timed = list(ex.map(timed_render, *zip(*args))) if args else []
    else:
        try: timed = [timed_render(*a) for a in args]
        finally: shutdown_kernel()
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
    return [n for n, _, _, _ in timed]


def _worker_init():
    "A build worker process: its reused kernel is stopped when the worker exits (multiprocessing runs its finalizers then)."
    from multiprocessing import util
    util.Finalize(None, shutdown_kernel, exitpriority=10)


def timed_render(path: Path, out: Path, pages: list, run: bool, skip_slow: bool, reuse: bool, timeout: int = 900,
                 key: str | None = None, keep_going: bool = False) -> tuple:
    """(page name, seconds to execute and render it, the error if it failed and `keep_going`, else None, cell times); a page
    executed from sources with `key` is recorded in `out/.built/` for `--reuse-built`."""
    import json
    t0 = time.time()
    try: name, cells = render(path, out, pages, run, skip_slow, reuse, timeout)
    except Exception as e:
        if not keep_going: raise
        return f"{path.stem}.html", time.time() - t0, re.sub(r"\x1b\[[0-9;]*m", "", f"{type(e).__name__}: {e}"), []
    if key: _record(out, path).parent.mkdir(exist_ok=True); _record(out, path).write_text(json.dumps(
        {"key": key, "complete": not (skip_slow and has_slow(path))}))
    return name, time.time() - t0, None, cells


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
