"""Max |x_backend - x_numpy| of the released point, for every registered algorithm seeded as in tests/test_checkpoint.py's RUNS,
on array-api-strict and torch (where installed): the figure behind tests/test_array_api.py (issue 20 §3).

    .venv/bin/python benchmarks/backend_agreement.py
"""
import sys, warnings
from pathlib import Path
import numpy as np
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_checkpoint import RUNS, _reference
from dpnotebooks.core.backend import use_backend, available_backends

if __name__ == "__main__":
    warnings.simplefilter("ignore")
    backends = [b for b in ("array-api-strict", "torch") if b in available_backends()]
    for alg in sorted(RUNS):
        a = np.array(_reference(alg)["x_out"]); row = [f"{alg:20}"]
        for b in backends:
            with use_backend(b): row.append(f"{b} {np.max(np.abs(np.array(_reference(alg)['x_out']) - a)):.1e}")
        print("  ".join(row), flush=True)
