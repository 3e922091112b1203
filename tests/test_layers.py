"""The package's layers, measured by tools/import_map.py: no module imports a layer above its own, but for the imports
listed in `KNOWN_UP`, each waiting on the part of the redesign (issue 42) that removes it. The list only shrinks: a new
upward import fails, and so does a listed one that is gone (take it off the list)."""
import ast
import pytest
from tools_loader import tool

im = tool("import_map")

# (importer, imported): the imports up a layer in the flat package of 0.1.0, and what removes each.
KNOWN_UP = {
    ("canary_audit", "cli"): "a RunRequest below the interface (issue 42 §3)",
    ("ganesh_sosp", "cost"): "specs beside their algorithms, one catalog (§2, §4)",
    ("ganesh_sosp", "sosp_algorithm"): "one SOSP template (§4)",
    ("minimize", "__init__"): "the version read from a module below planning (§1)",
    ("sosp_erm", "cost"): "specs beside their algorithms, one catalog (§2, §4)",
    ("sosp_erm", "minimize"): "specs beside their algorithms, one catalog (§2, §4)",
    ("sosp_erm", "sosp_algorithm"): "one SOSP template (§4)",
    ("stationarity_rates", "experiments"): "the rate table's experiment runner below planning (§1)",
}


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
    assert ("minimize", "ledger") in arrows and ("minimize", "__init__") in arrows        # `from .ledger import`, `from . import __version__`
    src = im.modules()["canary_audit"].read_text()
    inner = [n for f in ast.walk(ast.parse(src)) if isinstance(f, ast.FunctionDef) for n in ast.walk(f) if isinstance(n, ast.ImportFrom)]
    assert inner and ("canary_audit", "cli") in arrows                                      # imported inside a function


def test_an_upward_import_is_caught():
    "The check can fail: a core module importing the CLI, or the planner importing an audit, is upward; the reverse is not."
    fake = {("backend", "cli"), ("minimize", "canary_audit"), ("cli", "backend"), ("canary_audit", "minimize")}
    assert im.upward(fake) == [("backend", "cli"), ("minimize", "canary_audit")]


def test_floors_and_circles_on_a_small_graph():
    e = {("a", "b"), ("b", "c"), ("c", "b"), ("d", "a")}
    assert im.circles(e) == [["b", "c"]]
    assert im.floors(e, "abcd") == dict(b=1, c=1, a=2, d=3)
