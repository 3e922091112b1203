"""README.md is generated from nbs/index.ipynb, and its commands are the ones CI runs."""
import importlib.util, subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("make_readme", ROOT/"tools"/"make_readme.py")
make_readme = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_readme)

MAIN_CMD = 'python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/dpnb demo'
TEST_CMD = 'python3 -m venv .venv && .venv/bin/pip install uv && .venv/bin/uv pip install -p .venv --compile-bytecode -e ".[dev]" && .venv/bin/python tools/test.py'

def readme(): return (ROOT/"README.md").read_text(encoding="utf-8")

def test_readme_in_sync_with_index():
    ok, msg = make_readme.check(ROOT/"nbs"/"index.ipynb", ROOT/"README.md")
    assert ok, msg

def test_readme_has_exactly_the_two_commands():
    blocks = make_readme.fenced_blocks(readme())
    shell = [b for b in blocks if b[0] in ("sh", "bash", "shell", "console", "zsh")]
    assert [b[0] for b in shell] == ["sh", "sh"], "README must have exactly two shell blocks, both ```sh"
    assert make_readme.sh_commands(readme()) == {"Set up and run the main job:": MAIN_CMD, "Run every test:": TEST_CMD}

def test_ci_runs_the_readme_test_command():
    res = subprocess.run(["bash", str(ROOT/".ci"/"run"), "--print-test-command"],
                         capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.rstrip("\n") == make_readme.sh_commands(readme())["Run every test:"] == TEST_CMD

def test_conversion_rules():
    "Markdown verbatim; code fenced with directives stripped; `#| hide` cells and raw cells left out; text outputs kept."
    nb = {"cells": [
        {"cell_type": "markdown", "source": ["# Title\n", "\n", "text"]},
        {"cell_type": "code", "source": "#| hide\nfrom secret import *", "outputs": []},
        {"cell_type": "raw", "source": "---\ntitle: x\n---"},
        {"cell_type": "code", "source": "#| eval: false\nx = 1\nx", "outputs": [
            {"output_type": "stream", "name": "stdout", "text": ["hi\n"]},
            {"output_type": "execute_result", "data": {"text/plain": ["1"]}, "metadata": {}, "execution_count": 1}]},
    ]}
    md = make_readme.notebook_to_markdown(nb)
    assert md == f"{make_readme.HEADER}\n\n# Title\n\ntext\n\n```python\nx = 1\nx\n```\n\n```\nhi\n```\n\n```\n1\n```\n"

def test_check_reports_drift(tmp_path):
    out = tmp_path/"README.md"
    assert make_readme.main(["--out", str(out)]) == 0
    assert make_readme.main(["--check", "--out", str(out)]) == 0
    out.write_text(out.read_text() + "hand edit\n")
    ok, msg = make_readme.check(make_readme.NB_PATH, out)
    assert not ok and "tools/make_readme.py" in msg and "hand edit" in msg
    assert make_readme.main(["--check", "--out", str(out)]) == 1

def test_notebook_links_and_figures():
    "Relative notebook links get the nbs/ prefix (README sits at the root); URLs and anchors do not; figures are left out."
    nb = {"cells": [
        {"cell_type": "markdown", "source": "[a](70_x.ipynb), [b](21_sosp.ipynb#escape), [c](https://h.org/n.ipynb), [d](#top)"},
        {"cell_type": "code", "source": "plt.plot([1])", "outputs": [
            {"output_type": "display_data", "metadata": {}, "data": {"image/png": "iVBOR", "text/plain": ["<Figure size 640x480 with 1 Axes>"]}}]},
    ]}
    md = make_readme.notebook_to_markdown(nb)
    assert "[a](nbs/70_x.ipynb), [b](nbs/21_sosp.ipynb#escape), [c](https://h.org/n.ipynb), [d](#top)" in md
    assert "<Figure" not in md and md.endswith("```python\nplt.plot([1])\n```\n")

def test_readme_shows_the_private_run_and_its_report():
    "index.ipynb is stored executed: README shows the real-data run's output and its privacy report."
    text = readme()
    assert 'get_problem("logistic", data="breast-cancer")' in text and "held-out accuracy" in text and "training accuracy" not in text
    assert "| neighbouring | replace-one |" in text
    assert "epsilon spent / target" in text and "**Ledger**" in text
    for link in ("nbs/tutorials/70_bring_your_own_loss.ipynb", "nbs/tutorials/72_bring_your_own_model.ipynb", "nbs/planning/71_which_algorithm.ipynb"):
        assert f"]({link})" in text and (ROOT / link).exists(), link

def test_every_relative_link_resolves():
    "Each relative link of README (a notebook, a figure, a file of the repository) names a file that exists from the root."
    import re
    links = re.findall(r"\]\((?!\w+:|/|#)([^)\s#]+)(?:#[^)]*)?\)", readme())
    assert links, "README has no relative link: the pattern is wrong"
    missing = sorted({l for l in links if not (ROOT/l).exists()})
    assert not missing, f"README links to files that do not exist: {missing}"
