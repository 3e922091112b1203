"""`import dpnotebooks` and `dpnb --help` stay light (issue 46 §4): the heavy optional or slow-to-load packages are
imported where they are used, never at import. Which modules load is checked, not how long they take (the times are
measured by `benchmarks/import_time.py`, since a wall-clock limit would depend on the machine)."""
import json, subprocess, sys
import pytest

HEAVY = ("dp_accounting", "scipy.stats", "scipy.signal", "torch", "jax", "matplotlib", "pandas", "sklearn", "opacus", "cupy")

def _loaded(code:str) -> list:
    "The HEAVY modules present in sys.modules after running `code` in a fresh interpreter."
    probe = f"{code}\nimport sys, json; print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])

@pytest.mark.parametrize("code", ["import dpnotebooks", "import dpnotebooks.interface.cli",
                                  "from dpnotebooks.interface.cli import main\ntry: main(['--help'])\nexcept SystemExit: pass"])
def test_importing_loads_no_heavy_package(code):
    assert _loaded(code) == []

def test_the_accountant_loads_dp_accounting_when_used():
    "The lazy names still work: the exact accountant is built on first use, and pricing a release imports dp-accounting."
    code = ("import pickle\nfrom dpnotebooks.privacy.accounting import GaussianAccountant, epsilon_of, gaussian_event\n"
            "assert type(pickle.loads(pickle.dumps(GaussianAccountant()))) is GaussianAccountant\n"
            "assert abs(epsilon_of(gaussian_event(2.0, 1.0), 1e-6) - 2.2541) < 1e-3")
    assert "dp_accounting" in _loaded(code)
