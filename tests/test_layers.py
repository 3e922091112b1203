"""The package's layers, measured by tools/import_map.py: no module imports a layer above its own, but for the imports
listed in `KNOWN_UP`, each waiting on the change that removes it. The list only shrinks: a new
upward import fails, and so does a listed one that is gone (take it off the list)."""
import ast
import pytest
from tools_loader import tool

im = tool("import_map")

# (importer, imported): the imports up a layer still there, and what removes each.
KNOWN_UP: dict = {}


@pytest.fixture(scope="module")
def arrows():
    return im.arrows()


def test_no_new_import_up_a_layer(arrows):
    new = [f"{a} ({im.layer_of(a)}) imports {b} ({im.layer_of(b)})" for a, b in im.upward(arrows) if (a, b) not in KNOWN_UP]
    assert not new, "imports up a layer (import from the layer below, or move the module):\n" + "\n".join(new)


def test_the_known_list_only_shrinks(arrows):
    gone = sorted(set(KNOWN_UP) - set(im.upward(arrows)))
    assert not gone, f"no longer imported up a layer, take them off KNOWN_UP: {gone}"


def test_every_module_has_a_layer():
    assert not [m for m in im.modules() if im.layer_of(m) == "unassigned"]


def test_the_map_reads_every_kind_of_import(arrows):
    "Relative, absolute, `from . import module`, the package itself and imports inside functions are all arrows."
    assert ("planning.minimize", "privacy.ledger") in arrows                                # `from ..privacy.ledger import`
    assert ("planning.minimize", "__init__") not in arrows                                  # `from dpnotebooks import __version__`: metadata
    assert ("__init__", "planning.minimize") in arrows                                      # `from .planning.minimize import`
    src = im.modules()["audits.canary_audit"].read_text()
    inner = [n for f in ast.walk(ast.parse(src)) if isinstance(f, ast.FunctionDef) for n in ast.walk(f) if isinstance(n, ast.ImportFrom)]
    assert inner and ("audits.canary_audit", "planning.request") in arrows                                    # imported inside a function


def test_an_upward_import_is_caught():
    "The check can fail: a core module importing the CLI, or the planner importing an audit, is upward; the reverse is not."
    fake = {("core.backend", "interface.cli"), ("planning.minimize", "audits.canary_audit"), ("interface.cli", "core.backend"),
            ("audits.canary_audit", "planning.minimize"), ("backend", "cli")}          # the last: two modules of the flat package
    assert im.upward(fake) == [("backend", "cli"), ("core.backend", "interface.cli"), ("planning.minimize", "audits.canary_audit")]


def test_floors_and_circles_on_a_small_graph():
    e = {("a", "b"), ("b", "c"), ("c", "b"), ("d", "a")}
    assert im.circles(e) == [["b", "c"]]
    assert im.floors(e, "abcd") == dict(b=1, c=1, a=2, d=3)


def test_every_layer_is_a_subpackage_with_a_docstring():
    for layer in im.RANK:
        init = im.PKG / layer / "__init__.py"
        assert init.exists() and ast.get_docstring(ast.parse(init.read_text())), f"{init} is missing or has no docstring"


def test_every_notebook_exports_into_the_layer_of_its_folder():
    "A notebook in nbs/<layer>/ exports dpnotebooks.<layer>.<module> (the package's layers are the notebooks' folders)."
    import json, re
    wrong = []
    for nb in sorted((im.ROOT / "nbs").glob("*/*.ipynb")):
        src = "\n".join("".join(c["source"]) for c in json.loads(nb.read_text())["cells"] if c["cell_type"] == "code")
        m = re.search(r"^#\|\s*default_exp\s+(\S+)", src, re.M)
        if m and m.group(1) != "__init__" and m.group(1).split(".")[0] != nb.parent.name: wrong.append(f"{nb.parent.name}/{nb.name}: {m.group(1)}")
    assert not wrong, wrong


def test_no_module_adds_an_algorithm_by_being_imported():
    "The catalog is explicit (`planning.catalog.CATALOG`): no package module but the catalog calls `register` or writes into `ALGORITHMS`."
    import re
    hits = [f"{p.relative_to(im.ROOT)}: {l.strip()}" for p in sorted(im.PKG.rglob("*.py")) if p.name != "_modidx.py" and p != im.PKG / "planning" / "catalog.py"
            for l in p.read_text().splitlines()
            if re.match(r"\s*(register\(|ALGORITHMS\[[^]]+\]\s*=|ALGORITHMS\.update)", l) and "def register" not in l]
    assert hits == [], hits


MAX_LINES = 500   # a module a reader can hold in mind; the largest is about 490 lines

def test_no_module_is_over_max_lines():
    "Every exported module (nbdev's index aside) is at most MAX_LINES lines: split a page that grows past it."
    long = {m: n for m, p in im.modules().items() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}, f"modules over {MAX_LINES} lines (split the notebook): {long}"
