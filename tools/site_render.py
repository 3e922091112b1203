"""One page of the documentation site: an (executed) notebook, processed as nbdev does for docs, rendered to HTML.

- nbdev's directives applied: `#| hide` cells and `#| default_exp` dropped, `#| echo: false` hides the input,
  `#| output: false` the output, directive lines removed, and a `show_doc` block after every exported symbol;
- figures inline (base64), math by a local MathJax (the `jupyter-server-mathjax` package, no CDN, copied by `copy_mathjax`),
  links between notebooks rewritten to the pages, a sidebar on every page, no script loaded from the network.

`directives` (a cell's `#| name value` lines) is also what tools/nb_run.py and tools/build_cache.py read cells with.
No kernel here: tools/nb_run.py executes the notebook, tools/build_site.py puts the two together.
"""
from __future__ import annotations
import ast, html, importlib, re, shutil, sys
from pathlib import Path

# nbformat imports jsonschema, which imports its optional IRI-format checker, rfc3987-syntax, if installed (jupyter-server-
# mathjax's dependencies bring it): that module builds a grammar on import, 2.7 s of nbformat's 3.9 s here, in every process
# that reads a notebook. No notebook schema uses that format, so it is not loaded (jsonschema then leaves the format out).
# Here, before any nbformat import: tools/nb_run.py, tools/build_cache.py and tools/build_site.py import this module first.
sys.modules.setdefault("rfc3987_syntax", None)

DIRECTIVE = re.compile(r"^\s*#\|\s*(.*?)\s*$")
MATHJAX = "mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full"   # the configuration jupyter-server-mathjax ships
# Added to nbconvert's MathJax configuration. The fonts: jupyter-server-mathjax ships MathJax with the STIX-Web fonts only;
# MathJax's default, TeX, then fails to load and the formulas fall back to the system's fonts (upright letters, radicals
# drawn apart from their bar), so the HTML-CSS output is told to use STIX-Web, as Jupyter's classic notebook does. No fast
# preview: each formula is typeset once, not previewed first. tests/test_site.py checks both on a rendered page.
MATHJAX_CONFIG = ("messageStyle: 'none',", "messageStyle: 'none', \"fast-preview\": {disabled: true}, "
                  "\"HTML-CSS\": {availableFonts: [], preferredFont: null, webFont: \"STIX-Web\", imageFont: null},")


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


# The line each notebook's title cell ends with, linking its page in _site/ (tools/page_links.py writes it): left out of the page.
PAGE_LINK = re.compile(r"\n*^Its page with outputs: .*$", re.M)


def process(nb, module: str | None):
    "Apply nbdev's documentation directives and insert show_doc after exported symbols."
    import nbformat
    cells = []
    for c in nb.cells:
        if c.cell_type == "raw": continue
        if c.cell_type == "markdown":
            c.source = PAGE_LINK.sub("", c.source).rstrip("\n")          # the notebook's link to this very page
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
    return (f'<nav id="dpnb-sidebar"><a class="brand" href="index.html">dpnotebooks</a>{SEARCH_BOX}'
            f'<a class="api" href="api.html">API index</a><ul>{items}</ul></nav>')


# A search over every page, in the browser and offline: search.js (written by `search_index` after a build) holds each page's
# title and text; the box lists the pages holding every word typed, in sidebar order.
SEARCH_BOX = ('<input id="dpnb-search" type="search" placeholder="Search the pages" aria-label="Search the pages" '
              'oninput="dpnbSearch(this.value)"><ul id="dpnb-results"></ul><script src="search.js"></script><script>'
              'function dpnbSearch(q){const r=document.getElementById("dpnb-results");r.innerHTML="";'
              'const w=q.toLowerCase().split(/\\s+/).filter(x=>x.length>1);if(!w.length||!window.DPNB_INDEX)return;'
              'for(const p of DPNB_INDEX){if(w.every(x=>p.text.includes(x)||p.title.toLowerCase().includes(x))){'
              'const li=document.createElement("li"),a=document.createElement("a");a.href=p.page;a.textContent=p.title;'
              'li.appendChild(a);r.appendChild(li);}}}</script>')


STYLE = """<style>
#dpnb-sidebar{position:fixed;top:0;left:0;bottom:0;width:250px;overflow-y:auto;background:#f7f7f9;border-right:1px solid #ddd;
 padding:12px 10px;font:14px/1.35 system-ui,sans-serif;z-index:10}
#dpnb-sidebar .brand{font-weight:600;font-size:17px;display:block;margin-bottom:10px;color:#222;text-decoration:none}
#dpnb-sidebar ul{list-style:none;padding:0;margin:0}#dpnb-sidebar li{margin:3px 0}
#dpnb-sidebar li.active a{font-weight:600;color:#000}#dpnb-sidebar li.group{margin:12px 0 2px;font-size:12px;text-transform:uppercase;letter-spacing:.05em;color:#777}#dpnb-sidebar a{color:#2a5db0;text-decoration:none}
#dpnb-search{width:100%;box-sizing:border-box;margin:0 0 6px;padding:4px}#dpnb-results{margin-bottom:8px !important}
#dpnb-sidebar a.api{display:block;margin-bottom:8px}
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


def render(nb, path: Path, out: Path, pages: list) -> str:
    "Process and write the page of `nb` (read from `path`, executed or not); returns its file name."
    default_exp = next((directives(c.source)["default_exp"] for c in nb.cells
                        if c.cell_type == "code" and "default_exp" in directives(c.source)), None)
    module = None if not default_exp else "dpnotebooks" if default_exp == "__init__" else f"dpnotebooks.{default_exp}"
    nb = process(nb, module)
    inline_images(nb, path.parent)
    body, _ = _exporter(nb).from_notebook_node(nb, resources={"metadata": {"name": title_of(nb)}})
    body = re.sub(r'<script[^>]*\bsrc="https?://[^"]*"[^>]*>\s*</script>', "", body)          # nothing from the network
    body = re.sub(r'<link[^>]*\bhref="https?://[^"]*"[^>]*>', "", body)
    body = body.replace("</head>", STYLE + "\n</head>", 1).replace(*MATHJAX_CONFIG, 1)
    body = re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + sidebar(pages, path.stem), body, count=1)
    name = f"{path.stem}.html"
    (out / name).write_text(body)
    return name


def copy_mathjax(out: Path):
    import jupyter_server_mathjax
    src = Path(jupyter_server_mathjax.__file__).parent / "static"
    if not (out / "mathjax").exists(): shutil.copytree(src, out / "mathjax")


def _page(out: Path, name: str, title: str, body_html: str, pages: list, current: str):
    "A page of the site's own (no notebook): the sidebar, a title and `body_html`."
    (out / name).write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>{STYLE}</head>"
                            f"<body>{sidebar(pages, current)}<main style='max-width:1000px;padding:16px;font:15px/1.5 system-ui,sans-serif'>"
                            f"<h1>{html.escape(title)}</h1>{body_html}</main></body></html>")


def stub(path: Path, out: Path, pages: list, title: str, slow: bool = True):
    "The page of a notebook this build did not write (the fast tier leaves out those with slow cells; a failed page): how to build it."
    rel = f"nbs/{path.parent.name}/{path.name}" if path.parent.name != "nbs" else f"nbs/{path.name}"
    why = "This page runs slow cells, so the fast test tier did not build it." if slow else "This build did not write this page (it failed, or was not asked for)."
    _page(out, f"{path.stem}.html", title, f"<p>{why} Build it with "
          f"<code>python tools/build_site.py --only {path.stem}</code> (or the whole site: <code>python tools/build_site.py</code>; "
          f"CI's slow tier builds every page), or open its notebook, <code>{html.escape(rel)}</code>, in JupyterLab.</p>", pages, path.stem)


def api_entries(root: Path) -> list:
    "(module, name, signature, page stem) of every name in a module's `__all__`, read from the exported sources (nothing imported)."
    out = []
    for py in sorted((root / "dpnotebooks").rglob("*.py")):
        if py.name == "_modidx.py": continue
        src = py.read_text(); tree = ast.parse(src); lines = src.splitlines()
        names = next((ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in n.targets)), [])
        module = ".".join(py.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
        top = {getattr(n, "name", None) for n in tree.body}
        nested = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name in names and n.name not in top]   # built on first use (PEP 562)
        for node in tree.body + nested:
            name = node.name if isinstance(node, (ast.FunctionDef, ast.ClassDef)) else next((t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)), None)
            if name not in names: continue
            cell = next((m.group(1) for l in reversed(lines[:node.lineno]) if (m := re.match(r"# %% \S*?([\w-]+)\.ipynb", l))), None)
            sig = (f"{name}({ast.unparse(node.args)})" if isinstance(node, ast.FunctionDef) else
                   f"class {name}" + (f"({', '.join(ast.unparse(b) for b in node.bases)})" if isinstance(node, ast.ClassDef) and node.bases else "")
                   if isinstance(node, ast.ClassDef) else f"{name} = ...")
            out.append((module, name, sig, cell))
    return out


def api_page(root: Path, out: Path, pages: list):
    "api.html: every public name (a module's `__all__`) with its signature and a link to the page that defines it."
    built = {stem for stem, _, _ in pages}
    rows, module = [], None
    for mod, name, sig, cell in api_entries(root):
        if mod != module: rows.append(f"<h2 id='{mod}'>{mod}</h2>"); module = mod
        link = f"<a href='{cell}.html'>{cell}</a>" if cell in built else ""
        rows.append(f"<p><code>{html.escape(sig)}</code> <span style='color:#777'>{link}</span></p>")
    _page(out, "api.html", "API index", "<p>Every public name of the package, with its signature and the page that defines it.</p>" + "".join(rows), pages, "api")


def search_index(out: Path):
    "search.js: the title and the text (lower case, tags stripped) of every page in `out`, for the sidebar's search box."
    import json
    index = []
    for page in sorted(out.glob("*.html")):
        t = page.read_text()
        title = html.unescape((re.search(r"<title>(.*?)</title>", t, re.S) or [None, page.stem])[1]).strip()
        body = re.sub(r"<(script|style|nav)\b.*?</\1>", " ", t, flags=re.S)
        text = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", body))).lower()
        index.append(dict(page=page.name, title=title, text=text[:60000]))
    (out / "search.js").write_text("window.DPNB_INDEX = " + json.dumps(index) + ";\n")
