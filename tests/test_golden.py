"""Seeded runs of every registered algorithm repeat, bit for bit, the outputs recorded before the issue-19 refactor
(tests/golden/record.py wrote tests/golden/seeded_outputs.json at commit aa568d1). The array-API port (issue 20) left all
13 unchanged; dp-sgd's entry was re-recorded when issue 21 changed its defaults (Poisson sampling, batch, epochs,
step size, alpha = 0), and again when linear models got their fused clipped sum (issue 24 §3: the same steps, sums
rounded in another order; x_out moved by at most 4.8e-15, the ledger not at all): the other 12 are still the aa568d1 values."""
import json, warnings
from pathlib import Path
import pytest
from dpnotebooks.minimize import ALGORITHMS
from test_checkpoint import RUNS, _reference
from golden.record import fingerprint

GOLDEN = json.loads((Path(__file__).parent / "golden" / "seeded_outputs.json").read_text())

def test_every_registered_algorithm_has_a_recorded_output():
    assert set(GOLDEN) == set(ALGORITHMS), set(GOLDEN) ^ set(ALGORITHMS)

@pytest.mark.parametrize("algorithm", sorted(GOLDEN))
def test_seeded_run_matches_the_recorded_output(algorithm):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore"); got = fingerprint(_reference(algorithm))
    for key, want in GOLDEN[algorithm].items():
        assert got[key] == want, f"{algorithm}: {key} changed"
