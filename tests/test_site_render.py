"""How tools/site_render.py renders a page, without a browser: its exporter skips nbconvert's sanitizer (bleach) on the
highlighted code input only, and nbconvert's BeautifulSoup pass over the page (two substitutions add what it adds), and the
page, parsed as that pass parses it, is the one nbconvert's own lab exporter writes."""
import copy
import pytest
from tools_loader import tool

nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (pip install -e '.[dev]')")
nbconvert = pytest.importorskip("nbconvert", reason="nbconvert is not installed (pip install -e '.[dev]')")

CODE = ["<script>alert(1)</script>",
        "s = '''<img src=x onerror=alert(1)>''' & 1  # <!-- a comment --> \"quoted\" 'single'",
        "%matplotlib inline\n!ls -l > /dev/null\nf = lambda α, β: α ≤ β  # non-ASCII",
        "x = f\"{1 < 2!r:>{3}}\" ; y = b'\\x00\\xff' ; z = r'\\d+' ; w = 1_000j",
        "</div></pre><style>body{display:none}</style>\n\tdef g(*a, **k): return a @ k",
        ""]
MARKDOWN = "Text with <b>HTML</b>, $a < b$ & more."


PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="   # 1x1 pixel


def _nb():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(MARKDOWN)] + [nbformat.v4.new_code_cell(c) for c in CODE])
    nb.cells[1].outputs = [nbformat.v4.new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"}),
                           nbformat.v4.new_output("stream", text="printed <text>\n")]
    nb.cells.append(nbformat.v4.new_markdown_cell("![a figure with its own alt](data:image/png;base64," + PNG + ")"))
    nb.metadata["language_info"] = {"name": "python", "pygments_lexer": "ipython3"}
    return nb


def _as_nbconvert_parses(page: str) -> str:
    from bs4 import BeautifulSoup
    return str(BeautifulSoup(page, features="html.parser"))


def test_the_page_is_what_nbconvert_writes_with_the_sanitizer():
    sr = tool("site_render")
    from nbconvert import HTMLExporter
    ref = HTMLExporter(template_name="lab", exclude_input_prompt=True, exclude_output_prompt=True, mathjax_url=sr.MATHJAX)
    nb = _nb()
    want, _ = ref.from_notebook_node(copy.deepcopy(nb))
    for _ in range(2):                                  # the exporter is kept for the next page: the same page again
        got, _ = sr._exporter(nb).from_notebook_node(copy.deepcopy(nb))
        assert _as_nbconvert_parses(got) == want
    assert '<span class="o">&lt;</span><span class="n">script</span>' in got                # the code's text, escaped
    assert got.count('tabindex="0"') == want.count('tabindex="0"') > len(CODE)                # every code input, and the outputs
    assert got.count('alt="No description has been provided for this image"') == 1           # the output figure, not the markdown's


def test_the_accessibility_pass_can_fail():
    "Without `_accessible`, the page is not nbconvert's: the comparison above sees the attributes the pass adds."
    sr = tool("site_render")
    nb = _nb()
    from nbconvert import HTMLExporter
    want, _ = HTMLExporter(template_name="lab", exclude_input_prompt=True, exclude_output_prompt=True,
                           mathjax_url=sr.MATHJAX).from_notebook_node(copy.deepcopy(nb))
    real = sr._accessible
    try:
        sr._accessible = lambda page: page
        got, _ = sr._exporter(nb).from_notebook_node(copy.deepcopy(nb))
    finally: sr._accessible = real
    assert _as_nbconvert_parses(got) != want and 'tabindex="0"' not in got


def test_the_comparison_can_fail():
    "The unsanitized filter is what the page uses: feeding a raw tag through it shows (bleach would have escaped it)."
    sr = tool("site_render")
    clean = sr._exporter(_nb()).environment.filters["clean_html"]
    raw = "<script>alert(1)</script>"
    assert clean(sr._Highlighted(raw)) == raw and clean(raw) != raw
