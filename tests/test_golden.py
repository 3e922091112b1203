"""Seeded runs of every registered algorithm repeat the outputs recorded at commit aa568d1 (tests/golden/record.py
wrote tests/golden/seeded_outputs.json there, on an Intel Xeon; dp-sgd's entry re-recorded for its current
defaults and fused clipped sum; ztc-sharp's entry added when it was registered), to the tolerances across machines of tests/golden/record.py: the released point
to 1e-9 relative, ε spent and every number of the ledger to 1e-9, the data use exactly. Bit for bit is what a seed promises
on one machine: a run repeated in this process is checked to the bit here, a resumed one in test_checkpoint.py. The
tolerance is checked both ways: a one-ulp change everywhere passes, a step size changed by one part in a million, another
noise draw, or a ledger's σ changed by one part in a million fails."""
import functools, json, math, warnings
from pathlib import Path
import pytest
from dpnotebooks.planning.catalog import ALGORITHMS
from dpnotebooks.planning.request import run_algorithm
from test_checkpoint import RUNS, SEED, _reference
from golden.record import fingerprint, differences

GOLDEN = json.loads((Path(__file__).parent / "golden" / "seeded_outputs.json").read_text())

@functools.lru_cache(maxsize=None)
def _run(algorithm):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore"); return fingerprint(_reference(algorithm))

def test_every_registered_algorithm_has_a_recorded_output():
    assert set(GOLDEN) == set(ALGORITHMS), set(GOLDEN) ^ set(ALGORITHMS)

@pytest.mark.parametrize("algorithm", sorted(GOLDEN))
def test_seeded_run_matches_the_recorded_output(algorithm):
    assert differences(_run(algorithm), GOLDEN[algorithm]) == []

@pytest.mark.parametrize("algorithm", ["dp-sgd", "klt-single-pass", "lt-sosp"])
def test_a_seeded_run_repeats_bit_for_bit_on_the_same_machine(algorithm):
    first = _run(algorithm)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore"); again = fingerprint(_reference(algorithm))
    assert again == first

def _ulp_up(v):
    "Every nonzero float one ulp up (a zero stays: 0 against 5e-324 is a noise switched on, not a rounding)."
    if isinstance(v, float): return math.nextafter(v, math.inf) if v else v
    if isinstance(v, dict): return {k: _ulp_up(w) for k, w in v.items()}
    if isinstance(v, list): return [_ulp_up(w) for w in v]
    return v

@pytest.mark.parametrize("algorithm", sorted(GOLDEN))
def test_the_tolerance_passes_a_one_ulp_change_everywhere(algorithm):
    want = GOLDEN[algorithm]
    moved = dict(want, x_out=[_ulp_up(float.fromhex(v)).hex() for v in want["x_out"]],
                 epsilon_spent=want["epsilon_spent"] and math.nextafter(float.fromhex(want["epsilon_spent"]), math.inf).hex(),
                 events=json.dumps(_ulp_up(json.loads(want["events"])), sort_keys=True))
    assert moved != want and differences(moved, want) == []

def _dpsgd(**changes):
    prob, n, d, kw, ov = RUNS["dp-sgd"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fingerprint(run_algorithm("dp-sgd", prob, n, d, kw["epsilon"], kw["delta"], None, None, changes.pop("seed", SEED), **ov, **changes))

def test_the_tolerance_fails_a_step_size_changed_by_one_part_in_a_million():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore"); eta = _reference("dp-sgd")["plan"]["params"]["eta"]
    found = differences(_dpsgd(eta=eta * (1 + 1e-6)), GOLDEN["dp-sgd"])
    assert [m for m in found if m.startswith("x_out")], found

def test_the_tolerance_fails_another_noise_draw():
    found = differences(_dpsgd(seed=SEED + 1), GOLDEN["dp-sgd"])
    assert [m for m in found if m.startswith("x_out")], found

def test_the_tolerance_fails_a_ledger_sigma_changed_by_one_part_in_a_million():
    want = GOLDEN["dp-sgd"]; events = json.loads(want["events"])
    events[0]["sigma"] *= 1 + 1e-6
    found = differences(dict(want, events=json.dumps(events, sort_keys=True)), want)
    assert found and "sigma" in found[0], found
