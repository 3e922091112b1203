"""The package's shape stays what it was made. The import graph has no cycle and no module imports a `_`-prefixed
name from another; the budget is checked in one place (`minimize`); every driver runs through `run_loop`; the package face
exports the entry points; and the test tiers run both halves even when one fails."""
import ast, subprocess, sys
from pathlib import Path
from tools_loader import tool

ROOT = Path(__file__).resolve().parents[1]

def test_import_graph_is_acyclic_and_imports_no_private_names():
    im = tool("import_map")
    assert im.circles(im.arrows()) == [], im.circles(im.arrows())
    assert im.private_imports() == [], im.private_imports()

def test_cycle_detection_can_fail():
    im = tool("import_map")
    assert im.circles({("a", "b"), ("b", "c"), ("c", "a"), ("d", "a")}) == [["a", "b", "c"]]

def _calls(name):
    "(module, line) of every call of `name` in the package's source (modules by their dotted name below dpnotebooks)."
    out = []
    for mod, f in tool("import_map").modules().items():
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == name:
                out.append((mod, node.lineno))
    return out

def test_the_budget_is_checked_in_one_place():
    """Every algorithm's budget is checked in `minimize`; the only other caller prices a data-fitted preprocessing (private
    scaling) together with the training run it precedes, before the scaling reads a record (`data.check_composition`)."""
    assert sorted(m for m, _ in _calls("check_budget")) == ["planning.minimize", "problems.data"], _calls("check_budget")

def test_every_driver_runs_through_the_run_loop():
    loops = sorted(m for m, _ in _calls("run_loop"))
    assert loops == sorted("algorithms." + m for m in ["o2nc", "dpsgd", "spiderboost", "spiderboost", "convex_glm", "sosp", "sosp_erm", "ganesh_sosp"]), loops
    assert [m for m, _ in _calls("begin")] == ["engine.runloop"], _calls("begin")      # only the loop talks to the checkpointer

def test_the_package_face():
    import dpnotebooks
    for name in ("minimize", "plan", "get_problem", "Dataset", "set_backend", "Result", "list_algorithms"):
        assert name in dpnotebooks.__all__ and callable(getattr(dpnotebooks, name)), name
    assert "problem:" in dpnotebooks.minimize.__doc__ and "A tour" in dpnotebooks.__doc__

def test_the_tiers_run_both_parts_even_when_one_fails(tmp_path, monkeypatch):
    t = tool("test")
    marker = tmp_path / "second-ran"
    monkeypatch.setattr(t, "parts", lambda tier: [("first", [sys.executable, "-c", "raise SystemExit(3)"], {}),
                                                  ("second", [sys.executable, "-c", f"open({str(marker)!r}, 'w')"], {})])
    assert t.run("fast") == 1 and marker.exists()
    assert [n.split()[0] for n, _, _ in tool("test").parts("fast")] == ["notebooks", "pytest"]
    fast, slow = (tool("test").parts(t)[0][1] for t in ("fast", "slow"))        # the notebooks run once: the slow build reuses the fast one's pages
    assert {"--no-slow-pages", "--keep-going"} <= set(fast) and "--reuse-built" in slow and fast[fast.index("--out") + 1] == slow[slow.index("--out") + 1]
    assert not {"--no-slow-pages", "--skip-slow"} & set(slow)                  # the slow tier runs the rest, slow cells included

def test_slow_tests_are_left_out_of_the_fast_tier():
    res = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "tests/test_site.py"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert "test_every_page" not in res.stdout and "deselected" in res.stdout, res.stdout

def test_all_is_the_documented_face():
    "Every name README and the tutorials import from the top package is in `__all__`, and every name of `__all__` exists."
    import re, dpnotebooks
    texts = [(ROOT / "README.md").read_text()] + [p.read_text() for p in (ROOT / "nbs" / "tutorials").glob("*.ipynb")]
    used = {n.strip() for t in texts for m in re.finditer(r"from dpnotebooks import ([\w, ]+)", t) for n in m.group(1).split(",") if n.strip()}
    assert used and used <= set(dpnotebooks.__all__), sorted(used - set(dpnotebooks.__all__))
    assert all(hasattr(dpnotebooks, n) for n in dpnotebooks.__all__)
