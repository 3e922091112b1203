"""The tutorial notebook: its GPU section is the CPU run with one line changed, and it runs on a GPU where there is one."""
import json, re
from pathlib import Path
import pytest
from dpnotebooks.core import backend as B

NB = Path(__file__).resolve().parent.parent / "nbs" / "tutorials" / "70_bring_your_own_loss.ipynb"

def _code_cells():
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            for c in json.loads(NB.read_text())["cells"] if c["cell_type"] == "code"]

def test_gpu_section_changes_one_line():
    "The GPU cell builds the same problem and calls minimize with the same arguments; the added line is set_backend('cupy')."
    cells = _code_cells()
    (cpu,) = [c for c in cells if c.startswith("from dpnotebooks.planning.minimize import minimize")]
    (gpu,) = [c for c in cells if 'set_backend("cupy")' in c]
    call = re.search(r'minimize\(problem, ("klt-first-order".*?)\)\n', cpu).group(1)
    assert f"minimize(problem_gpu, {call})" in gpu
    build = [c for c in cells if c.startswith("problem = RampLoss(")][0].splitlines()[0].split("=", 1)[1].strip()
    assert f"problem_gpu = {build}" in gpu
    assert [l.strip() for l in gpu.splitlines() if "set_backend(" in l][0].startswith('set_backend("cupy")')

@pytest.mark.skipif("cupy" not in B.available_backends(), reason="no usable CUDA GPU (cupy) here")
def test_tutorial_runs_on_gpu():
    "Execute the whole tutorial where cupy works: its GPU cell runs and checks the privacy report."
    import nbformat
    from nbclient import NotebookClient
    nb = nbformat.read(NB, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(NB.parent)}}).execute()
    out = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "GPU: loss" in out
