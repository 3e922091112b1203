"""How tools/build_site.py renders a page, without a browser: its exporter skips nbconvert's sanitizer (bleach) on the
highlighted code input only, and the page is the one nbconvert's own lab exporter writes."""
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


def _nb():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(MARKDOWN)] + [nbformat.v4.new_code_cell(c) for c in CODE])
    nb.metadata["language_info"] = {"name": "python", "pygments_lexer": "ipython3"}
    return nb


def test_the_page_is_what_nbconvert_writes_with_the_sanitizer():
    bs = tool("build_site")
    from nbconvert import HTMLExporter
    ref = HTMLExporter(template_name="lab", exclude_input_prompt=True, exclude_output_prompt=True, mathjax_url=bs.MATHJAX)
    nb = _nb()
    want, _ = ref.from_notebook_node(copy.deepcopy(nb))
    for _ in range(2):                                  # the exporter is kept for the next page: the same page again
        got, _ = bs._exporter(nb).from_notebook_node(copy.deepcopy(nb))
        assert got == want
    assert '<span class="o">&lt;</span><span class="n">script</span>' in got                # the code's text, escaped


def test_the_comparison_can_fail():
    "The unsanitized filter is what the page uses: feeding a raw tag through it shows (bleach would have escaped it)."
    bs = tool("build_site")
    clean = bs._exporter(_nb()).environment.filters["clean_html"]
    raw = "<script>alert(1)</script>"
    assert clean(bs._Highlighted(raw)) == raw and clean(raw) != raw
