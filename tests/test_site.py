"""The offline documentation site (tools/build_site.py) in headless Chromium: every page loads, every internal link resolves,
every image loads, every formula parses in MathJax's TeX input and none is left unrendered; an algorithm page and the home
page typeset in the fonts the site ships, and their screenshots go to the build folder.

MathJax's HTML-CSS output measures every glyph of every formula (about 40 ms a formula here: 7 s for the SOSP page), so the
tour of every page sets the formulas as the browser's own MathML instead (MathJax's NativeMML output, chosen through the
`AuthorInit` hook before MathJax starts): the TeX input, its error messages and the delimiters are the same, and the tour
takes about 80 s instead of 180 s here. `test_math_and_figures_render` checks the HTML-CSS output itself.

The site is built once per session into $DPNB_SITE (default: a temporary folder; .ci/run builds _site first and points here),
but for the pages already there from the same sources with their slow cells run (tools/build_site.py --reuse-built).
Skipped when Chromium, chromedriver or selenium are missing (.ci/run installs them)."""
import contextlib, os, shutil, subprocess, sys, time
from pathlib import Path
from urllib.parse import urlparse, unquote
import pytest
from tools_loader import tool

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
selenium = pytest.importorskip("selenium", reason="selenium is not installed (pip install -e '.[dev]')")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not (CHROMIUM and DRIVER), reason="chromium and chromium-driver are not installed")]

# Text left between math delimiters after MathJax ran (outside code, scripts and MathJax's own output) means unrendered math.
UNRENDERED_JS = r"""
const bad = [];
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
const skip = n => n.closest('pre, code, script, style, textarea, .MathJax, .MathJax_CHTML, .MathJax_Display, .MathJax_Preview, .MathJax_MathML, math, mjx-container, #dpnb-sidebar, .highlight, .jp-InputArea-editor, .jp-OutputArea-output pre');
let node;
while ((node = walker.nextNode())) {
  const el = node.parentElement; if (!el || skip(el)) continue;
  const t = node.textContent;
  if (/\$\$[^$]+\$\$/.test(t) || /(^|[^\\$])\$[^$\s][^$]*[^\s\\]\$/.test(t) || /\\\(|\\\[|\\frac|\\sqrt|\\mathbb/.test(t)) bad.push(t.slice(0, 120));
}
return bad;
"""


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    out = Path(os.environ.get("DPNB_SITE") or tmp_path_factory.mktemp("site"))
    bs, cache = tool("build_site"), tool("build_cache")
    if not cache.complete(out, bs.notebooks(ROOT / "nbs"), ROOT):   # pages missing, failed, built without their slow cells or from other sources
        subprocess.run([sys.executable, str(ROOT / "tools" / "build_site.py"), "--out", str(out), "--reuse-built"], check=True, timeout=1800)
    return out


@pytest.fixture(scope="session")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--window-size=1400,1000",
              "--allow-file-access-from-files"):
        opts.add_argument(a)
    drv = webdriver.Chrome(service=Service(DRIVER), options=opts)
    drv.set_page_load_timeout(120)
    yield drv
    drv.quit()


def _load(browser, page: Path):
    browser.get(page.as_uri())
    for _ in range(600):                                           # wait for MathJax 2 to finish typesetting (≤ 60 s)
        done = browser.execute_script("return !(window.MathJax && MathJax.Hub) || (MathJax.Hub.queue.pending === 0 && MathJax.Hub.queue.running === 0 && document.readyState === 'complete');")
        if done: break
        time.sleep(0.1)
    return done


# Before MathJax starts on a page: its formulas as native MathML, and the TeX input's errors recorded (MathJax shows them in
# place, in red or framed, without failing: its noErrors and noUndefined extensions).
MATHML_TOUR_JS = """window.MathJax = {AuthorInit: function () {
  var H = MathJax.Hub, errors = window.dpnbTexErrors = [];
  H.Config({menuSettings: {renderer: "NativeMML"}});
  H.Register.MessageHook("TeX Jax - parse error", function (m) { errors.push(m[1] + " in " + String(m[2]).slice(0, 80)); });
  H.Register.MessageHook("TeX Jax - undefined control sequence", function (m) { errors.push("undefined " + m[1]); });
  H.Register.MessageHook("Math Processing Error", function (m) { errors.push("Math Processing Error: " + m[2]); });
}};"""


@contextlib.contextmanager
def mathml_tour(browser):
    "Pages opened inside set their formulas as native MathML and record TeX errors in `window.dpnbTexErrors`."
    hook = browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": MATHML_TOUR_JS})["identifier"]
    try: yield
    finally: browser.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", {"identifier": hook})


@pytest.mark.slow
def test_every_page(site, browser):
    pages = sorted(site.glob("*.html"))
    assert (site / "index.html") in pages, [p.name for p in pages]
    problems = []
    with mathml_tour(browser):
        for page in pages: problems += _page_problems(browser, page, pages)
    assert not problems, "\n".join(problems)


def _page_problems(browser, page, pages) -> list:
    "What is wrong with one page: MathJax unfinished or not in MathML, TeX errors, sidebar, links, anchors, images, unrendered math."
    problems = []
    if not _load(browser, page): return [f"{page.name}: MathJax did not finish"]
    jax, errors = browser.execute_script("return window.MathJax && MathJax.Hub ? [MathJax.Hub.outputJax['jax/mml'][0].id, window.dpnbTexErrors || []] : [null, []]")
    if jax not in (None, "NativeMML"): problems.append(f"{page.name}: formulas set by {jax}, not NativeMML: the tour's hook did not run")
    problems += [f"{page.name}: TeX error: {e}" for e in errors]
    title = browser.title
    side = browser.execute_script("return document.querySelectorAll('#dpnb-sidebar a').length")
    if not title or side < len(pages): problems.append(f"{page.name}: title {title!r}, {side} sidebar links for {len(pages)} pages")
    fragments = []                                                     # this page's own anchors, checked in one call below
    for href in browser.execute_script("return [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href'))"):
        u = urlparse(href)
        if u.scheme in ("http", "https", "mailto") or (not u.path and not u.fragment): continue
        target = (page.parent / unquote(u.path)).resolve() if u.path else page
        if not target.exists(): problems.append(f"{page.name}: broken link {href}"); continue
        if u.fragment and target == page: fragments.append([unquote(u.fragment), u.fragment])
    missing = browser.execute_script(                                  # as browsers do: the decoded fragment, then the raw one
        "return arguments[0].filter(fs => !fs.some(f => document.getElementById(f) || document.getElementsByName(f).length)).map(fs => fs[1])", fragments)
    problems += [f"{page.name}: missing anchor #{f}" for f in missing]
    broken = browser.execute_script("return [...document.images].filter(i => !(i.complete && i.naturalWidth > 0)).map(i => (i.getAttribute('src') || '').slice(0, 60))")
    if broken: problems.append(f"{page.name}: images not loaded {broken}")
    bad = browser.execute_script(UNRENDERED_JS)
    if bad: problems.append(f"{page.name}: unrendered math {bad[:3]}")
    return problems


@pytest.mark.slow
def test_the_tour_catches_tex_errors_and_raw_math(site, browser):
    "A copy of a page with an undefined macro, an unclosed brace, a formula MathJax was told to skip and a link to a missing anchor: the tour names all four."
    src, bad = site / "04f_data.html", site / "zz_tour_check.html"
    pages = sorted(site.glob("*.html"))
    html = src.read_text().replace("<p>", "<p>$\\undefinedmacro x$, $\\frac{1}{$, <code>$x$</code>, <span class='tex2jax_ignore'>$y^2$</span> "
                                   "and <a href='#nowhere'>a missing anchor</a></p><p>", 1)
    bad.write_text(html)
    try:
        with mathml_tour(browser): problems = _page_problems(browser, bad, pages)
    finally: bad.unlink()
    text = "\n".join(problems)
    assert "TeX error: undefined \\undefinedmacro" in text and "TeX error: Missing close brace" in text, text
    assert "unrendered math" in text and "missing anchor #nowhere" in text and len(problems) == 4, text
    assert _load(browser, src) and browser.execute_script("return MathJax.Hub.outputJax['jax/mml'][0].id") == "HTML-CSS"   # the hook is gone


@pytest.mark.slow
def test_math_and_figures_render(site, browser):
    "The SOSP page typesets its formulas and shows its figures; screenshots are saved for CI."
    assert _load(browser, site / "21_sosp.html")
    assert browser.execute_script("return document.querySelectorAll('.MathJax_CHTML, .MathJax, mjx-container').length") > 20
    assert browser.execute_script("return MathJax.Hub.config['fast-preview'].disabled === true")   # site_render.MATHJAX_CONFIG: typeset once
    font = browser.execute_script("return MathJax.OutputJax['HTML-CSS'].fontInUse")                 # and in fonts the site ships
    assert (site / "mathjax" / "fonts" / "HTML-CSS" / font).is_dir(), f"MathJax typesets in {font!r}, whose fonts the site lacks"
    assert browser.execute_script("return [...document.images].filter(i => i.naturalWidth > 300).length") >= 2
    assert "lt_sosp" in browser.page_source and "Algorithm 3" in browser.page_source
    browser.save_screenshot(str(site / "screenshot-21_sosp.png"))
    assert _load(browser, site / "index.html")
    browser.save_screenshot(str(site / "screenshot-index.png"))
    for shot in ("screenshot-index.png", "screenshot-21_sosp.png"): assert (site / shot).stat().st_size > 10_000

def test_build_never_runs_export_cells(tmp_path):
    "Like nbdev-test, the site build skips `nbdev_export()` cells: notebooks built in parallel must not race on the package files."
    import nbformat
    nr = tool("nb_run")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"),
                                         nbformat.v4.new_code_cell("import nbdev; nbdev.nbdev_export(); raise SystemExit('export ran')"),
                                         nbformat.v4.new_code_cell("print(x + 1)")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "python3", "language": "python"}
    out = nr.execute(nb, tmp_path / "t.ipynb", nr.run_flags(ROOT))
    assert "nbdev_export()" in out.cells[1].source and out.cells[1].outputs == []
    assert out.cells[2].outputs[0]["text"] == "2\n"

def test_a_heartbeat_thread_blocked_at_shutdown_does_not_hang_the_build():
    "The site build's HBChannel.stop gives up on a heartbeat thread blocked on a dead kernel's socket, and leaves its socket open."
    import threading
    nr = tool("nb_run")
    class Blocked(threading.Thread):
        def __init__(self):
            super().__init__(daemon=True); self._exit, self.release, self.closed = threading.Event(), threading.Event(), False
        def run(self): self.release.wait()                      # blocked, as on a socket that never answers
        def close(self): self.closed = True
    hb = Blocked(); hb.start()
    stopper = threading.Thread(target=nr._stop_heartbeat, args=(hb,), kwargs=dict(wait=0.2), daemon=True); stopper.start()
    stopper.join(120)                                           # a hang guard, not a timing bound: it returns after its 0.2 s wait
    assert not stopper.is_alive() and hb.is_alive() and not hb.closed and hb._exit.is_set() and hb._running is False
    hb.release.set(); hb.join(5); nr._stop_heartbeat(hb, wait=0.2); assert hb.closed       # a thread that ended: closed as usual

def test_a_reused_kernel_starts_each_page_fresh(tmp_path):
    "Pages run in one kernel (`execute(..., reuse=True)`, as the build does) see none of the previous page's names, warnings filters, environment, sys.path, matplotlib settings, backend or JAX precision, and run in their own folder."
    import nbformat
    nr = tool("nb_run")
    flags = nr.run_flags(ROOT)                                      # the cells the build leaves out (none here)
    def nb(src):
        plot = "import matplotlib.pyplot as plt\nfig, ax = plt.subplots(); ax.plot([0, 1])"     # a figure on each page, shown
        n = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(src), nbformat.v4.new_code_cell(plot)])
        n.metadata["kernelspec"] = {"name": "python3", "display_name": "python3", "language": "python"}
        return n
    first = nb("import os, sys, warnings, matplotlib\nfrom dpnotebooks.core.backend import set_backend\nx = 1; warnings.simplefilter('ignore'); "
               "os.environ['DPNB_LEAK'] = '1'; sys.path.insert(0, 'leak'); matplotlib.rcParams['font.size'] = 31; set_backend('numpy', 'float32')\n"
               "def g(): return 7\ndef f(): return g()\nimport dpnotebooks; dpnotebooks._kept = f\n"    # registered in the package, as 30_minimize does
               "import jax; jax.config.update('jax_enable_x64', True)\n"                            # as from_jax does
               "matplotlib.use('Agg')\n"                                                              # as dpnb demo's plots do
               "print(os.getpid())")
    second = nb("import os, sys, warnings, matplotlib\nfrom dpnotebooks.core.backend import get_dtype\n"
                "print(os.getpid(), 'x' in dir(), os.path.basename(os.getcwd()), 'DPNB_LEAK' in os.environ, 'leak' in sys.path, "
                "matplotlib.rcParams['font.size'], get_dtype(), any(f[:3] == ('ignore', None, Warning) for f in warnings.filters))\n"
                "import dpnotebooks; print(dpnotebooks._kept()); del dpnotebooks._kept\nimport jax.numpy as jnp; print(jnp.zeros(1).dtype)")
    for d in "ab": (tmp_path / d).mkdir()
    try:
        text = lambda page: "".join(o.get("text", "") for o in page.cells[0].outputs if o.get("output_type") == "stream")
        pid = text(nr.execute(first, tmp_path / "a" / "1.ipynb", flags, reuse=True)).strip()
        out = text(nr.execute(second, tmp_path / "b" / "2.ipynb", flags, reuse=True))
        once = nb("import os; print(os.getpid())"); once.cells = once.cells[:1]
        other = text(nr.execute(once, tmp_path / "b" / "3.ipynb", flags)).strip()      # reuse=False: its own kernel, not the saved one
    finally: nr.shutdown_kernel()
    assert other.isdigit() and other != pid, (other, pid)
    assert out == f"{pid} False b False False 10.0 float64 False\n7\nfloat32\n", out   # the same kernel, nothing carried over, and a function
                                                                               # the first page left in the package still runs
    assert len(first.cells) == len(second.cells) == 2                           # the reset cell is not in the pages
    assert any("image/png" in o.get("data", {}) for o in second.cells[1].outputs), second.cells[1].outputs     # inline again

def test_the_fast_tier_build_reports_every_failure_and_the_slow_tier_reuses_its_pages(tmp_path, capsys):
    "`--no-slow-pages --keep-going` (the fast tier) builds every page without slow cells, lists each failing notebook and exits 1; `--reuse-built` (the slow tier) then runs the pages with slow cells, in full, and the failed ones, not those already built from the same sources."
    import nbformat
    bs, cache = tool("build_site"), tool("build_cache")
    nbs = tmp_path / "nbs"; (nbs / "core").mkdir(parents=True)
    (tmp_path / "pyproject.toml").write_text('[tool.nbdev]\ntst_flags = "notest slow gpu"\n')
    def write(path, *srcs):
        n = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"# {path.stem}")] + [nbformat.v4.new_code_cell(s) for s in srcs])
        n.metadata["kernelspec"] = {"name": "python3", "display_name": "python3", "language": "python"}
        nbformat.write(n, path)
    write(nbs / "index.ipynb", "print('home')")
    write(nbs / "core" / "01_bad.ipynb", "assert 1 == 2, 'a failing check'")
    write(nbs / "core" / "02_slow.ipynb", "print('fast', 'ran')", "#| slow\nprint('slow', 'ran')", "#| notest\nraise ValueError")  # a flagged cell: never run
    out = tmp_path / "site"                                              # root=tmp_path: the pages, test flags and source key
    with pytest.raises(SystemExit): bs.build(out, jobs=1, slow_pages=False, keep_going=True, root=tmp_path)
    std = capsys.readouterr()
    assert "01_bad.ipynb FAILED" in std.err and "a failing check" in std.err and "Notebooks that failed:\n\t01_bad.ipynb" in std.err, std.err
    assert "1 notebooks with slow cells left out (the slow tier runs them): 02_slow" in std.out, std.out
    assert (out / "index.html").exists() and not cache.built(out, nbs / "core" / "02_slow.ipynb", cache.source_key(tmp_path))
    assert "runs slow cells" in (out / "02_slow.html").read_text() and "did not write this page" in (out / "01_bad.html").read_text()   # stubs
    with pytest.raises(SystemExit): bs.build(out, jobs=1, reuse_built=True, keep_going=True, root=tmp_path)
    assert "1 pages already built from these sources (reused): index" in capsys.readouterr().out
    assert "fast ran" in (out / "02_slow.html").read_text() and "slow ran" in (out / "02_slow.html").read_text()
    key, pages = cache.source_key(tmp_path), bs.notebooks(nbs)
    assert cache.built(out, nbs / "core" / "02_slow.ipynb", key) and not cache.complete(out, pages, tmp_path)    # 01_bad still fails
    bs.build(out, jobs=1, only=["02_slow"], skip_slow=True, root=tmp_path)   # as nbdev-test runs it: the slow cell left out ...
    assert "fast ran" in (out / "02_slow.html").read_text() and "slow ran" not in (out / "02_slow.html").read_text()
    assert not cache.built(out, nbs / "core" / "02_slow.ipynb", key)       # ... so the slow tier would run it again
    write(nbs / "core" / "01_bad.ipynb", "assert 1 == 1")                 # a changed source: no page is reused
    assert sorted(bs.build(out, jobs=1, reuse_built=True, root=tmp_path)) == ["01_bad.html", "02_slow.html", "index.html"]
    assert cache.complete(out, pages, tmp_path)
