"""Record the seeded outputs that tests/test_golden.py compares against (run once, before a refactor).

    .venv/bin/python tests/golden/record.py      # rewrites tests/golden/seeded_outputs.json
"""
import json, sys, warnings
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from test_checkpoint import RUNS, SEED, _reference

def fingerprint(rec:dict) -> dict:
    "What must not change bit for bit: the released point, the plan's numbers and the ledger's events."
    return dict(x_out=[float(v).hex() for v in rec["x_out"]], epsilon_spent=None if rec["privacy"]["epsilon_spent"] is None else float(rec["privacy"]["epsilon_spent"]).hex(),
                events=json.dumps(rec["privacy"]["events"], sort_keys=True, default=str),
                samples_used=rec["samples_used"], max_uses_per_sample=rec["max_uses_per_sample"])

if __name__ == "__main__":
    out = {}
    for alg in sorted(RUNS):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore"); out[alg] = fingerprint(_reference(alg))
        print(alg, out[alg]["x_out"][:2], flush=True)
    (Path(__file__).parent / "seeded_outputs.json").write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
