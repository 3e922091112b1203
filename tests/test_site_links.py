"""The site's own pages, without a browser: a build of two pages (not executed) has a page for every sidebar entry (the others
stubs that say how to build them), no dead local link, a search index over every page, and an API index of every public name.
The slow tier opens the full site in Chromium (tests/test_site.py)."""
import json, re, subprocess, sys
from pathlib import Path
from urllib.parse import urlparse, unquote
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def small_site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, str(ROOT / "tools" / "build_site.py"), "--out", str(out), "--only", "index,02_tree", "--no-execute"],
                   check=True, timeout=600, capture_output=True)
    return out


def test_no_dead_local_link(small_site):
    "Every href of every page that is not a web address resolves to a file of the site (stubs stand in for pages not built)."
    pages = sorted(small_site.glob("*.html"))
    nbs = [p for p in (ROOT / "nbs").rglob("*.ipynb") if re.match(r"^\d", p.name) or p.name == "index.ipynb"]
    assert {p.stem for p in nbs} <= {p.stem for p in pages}, "a notebook has no page"
    dead = []
    for page in pages:
        for href in re.findall(r'href="([^"]*)"', page.read_text()):
            u = urlparse(href)
            if u.scheme or not u.path: continue
            if not (page.parent / unquote(u.path)).exists(): dead.append(f"{page.name} -> {href}")
    assert not dead, dead[:10]
    stub = (small_site / "13_dpsgd.html").read_text()
    assert "python tools/build_site.py --only 13_dpsgd" in stub and "dpnb-sidebar" in stub


def test_search_index_covers_every_page(small_site):
    text = (small_site / "search.js").read_text()
    index = json.loads(text.removeprefix("window.DPNB_INDEX = ").rstrip().rstrip(";"))
    assert {e["page"] for e in index} == {p.name for p in small_site.glob("*.html")}
    assert any("tree" in e["text"] for e in index if e["page"] == "02_tree.html")
    assert 'id="dpnb-search"' in (small_site / "02_tree.html").read_text()


def test_api_index_lists_public_names(small_site):
    api = (small_site / "api.html").read_text()
    assert "minimize(problem" in api and "dpnotebooks.planning.minimize" in api
    assert "<a href='02_tree.html'>02_tree</a>" in api                  # a name defined on a built page links to it


def test_each_notebook_links_its_page(small_site):
    "Every numbered notebook's title cell links its page in _site/ (tools/page_links.py --check), and the page itself leaves the line out."
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "page_links.py"), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout
    assert "Its page with outputs" not in (small_site / "02_tree.html").read_text()
