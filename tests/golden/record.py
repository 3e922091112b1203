"""Record the seeded outputs that tests/test_golden.py compares against (run once, before a refactor), and the comparison.

    .venv/bin/python tests/golden/record.py      # rewrites tests/golden/seeded_outputs.json

What a seed promises. On the same machine and environment (CPU, BLAS kernel and thread count, package versions) a seeded run
repeats bit for bit: re-run, resumed after a kill, or in another process. On another machine the noise draws are the same
(numpy's generators are portable), but sums and products may round in another order (another BLAS kernel, another SIMD
width, another FFT in the accountant), so the outputs agree to a tolerance, not to the bit. The recorded outputs were
written on an Intel Xeon (OpenBLAS SkylakeX kernel, AVX-512); on an AMD EPYC (Haswell kernel, AVX2) and under OpenBLAS's
Prescott kernel with numpy's AVX2 paths disabled, the released points differed by at most 5.2e-15 relative (79 ulps),
ε spent by at most 3.7e-11 relative, and the ledger's events, the data use and every count not at all.
"""
import json, math, sys, warnings
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from test_checkpoint import RUNS, _reference

# Tolerances across machines. 1e-9 is five orders of magnitude above what another CPU changed (5e-15 on x, 4e-11 on ε),
# and far below what a real change does: in dp-sgd's recorded run a step size changed by one part in a million moves x by
# 1.8e-3 relative (the nonsmooth loss's kinks amplify it), another noise draw by 1e-2 (tests/test_golden.py checks that
# both fail and that a one-ulp change everywhere passes). A rounding difference could in principle flip a kink too; over
# the recorded runs' few hundred thousand evaluations at 1e-15 that chance is about 1e-10.
X_RTOL = 1e-9        # on the released point: max_i |x_i - x̂_i| <= X_RTOL · max_i |x̂_i|
LEDGER_RTOL = 1e-9   # on ε spent and every number in the ledger's events: the PLD accountant's FFTs round per machine

def fingerprint(rec:dict) -> dict:
    "What must not change: the released point, the plan's numbers and the ledger's events (floats as exact hex strings)."
    return dict(x_out=[float(v).hex() for v in rec["x_out"]], epsilon_spent=None if rec["privacy"]["epsilon_spent"] is None else float(rec["privacy"]["epsilon_spent"]).hex(),
                events=json.dumps(rec["privacy"]["events"], sort_keys=True, default=str),
                samples_used=rec["samples_used"], max_uses_per_sample=rec["max_uses_per_sample"])

def _close(a:float, b:float, rtol:float, scale:float=None) -> bool:
    return a == b or (math.isfinite(a) and math.isfinite(b) and abs(a - b) <= rtol * (abs(b) if scale is None else scale))

def _same_numbers(got, want, rtol:float, path:str="events") -> list:
    "Differences between two JSON values: structure, strings, integers and booleans exactly, floats to `rtol`."
    if isinstance(want, dict):
        if not isinstance(got, dict) or set(got) != set(want): return [f"{path}: keys {sorted(got) if isinstance(got, dict) else got} != {sorted(want)}"]
        return [m for k in want for m in _same_numbers(got[k], want[k], rtol, f"{path}.{k}")]
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want): return [f"{path}: length differs"]
        return [m for i, (g, w) in enumerate(zip(got, want)) for m in _same_numbers(g, w, rtol, f"{path}[{i}]")]
    if isinstance(want, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        return [] if _close(float(got), want, rtol) else [f"{path}: {got!r} != {want!r} (rtol {rtol:g})"]
    return [] if (type(got) is type(want) and got == want) else [f"{path}: {got!r} != {want!r}"]

def differences(got:dict, want:dict, x_rtol:float=X_RTOL, ledger_rtol:float=LEDGER_RTOL) -> list:
    "What differs between two fingerprints beyond the tolerances across machines (an empty list: they agree)."
    out = []
    x, w = [float.fromhex(v) for v in got["x_out"]], [float.fromhex(v) for v in want["x_out"]]
    scale = max((abs(v) for v in w), default=0.0) or 1.0
    if len(x) != len(w): out.append(f"x_out: dimension {len(x)} != {len(w)}")
    else:
        worst = max((abs(a - b) for a, b in zip(x, w)), default=0.0)
        if not all(_close(a, b, x_rtol, scale) for a, b in zip(x, w)): out.append(f"x_out: max |Δ| {worst:.3g} > {x_rtol:g} · {scale:.3g}")
    e, ew = got["epsilon_spent"], want["epsilon_spent"]
    if (e is None) != (ew is None) or (e is not None and not _close(float.fromhex(e), float.fromhex(ew), ledger_rtol)):
        out.append(f"epsilon_spent: {e and float.fromhex(e)!r} != {ew and float.fromhex(ew)!r} (rtol {ledger_rtol:g})")
    out += _same_numbers(json.loads(got["events"]), json.loads(want["events"]), ledger_rtol)
    out += [f"{k}: {got[k]} != {want[k]}" for k in ("samples_used", "max_uses_per_sample") if got[k] != want[k]]
    return out

if __name__ == "__main__":
    out = {}
    for alg in sorted(RUNS):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore"); out[alg] = fingerprint(_reference(alg))
        print(alg, out[alg]["x_out"][:2], flush=True)
    (Path(__file__).parent / "seeded_outputs.json").write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
