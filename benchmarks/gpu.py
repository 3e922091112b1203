"""Issue 24 §5, the GPU rows: the zeroth-order estimator on numpy and cupy at d = m = 4096, the estimator beside cuBLAS
products of its own shapes, the cupy generator's cost per draw, and the PyTorch adapter on CUDA (`from_torch(device='cuda')`).

Run where a CUDA GPU, cupy and torch are installed (skipped sections say why otherwise):

    python benchmarks/gpu.py --out gpu-bench            # gpu-bench/gpu.json and gpu-bench/gpu.md
    python benchmarks/gpu.py --quick --out /tmp/g       # small shapes: checks the script itself on any machine
    python benchmarks/gpu.py --sections suite           # every job of `dpnb bench --quick` on cupy, 10 s each at most

Every time is the median of `--repeat` calls after a warm-up, with the GPU synchronized before the clock stops
(`dpnotebooks.experiments.bench.measure`). Nothing here is asserted: these are measurements, written down with the machine.
"""
import argparse, json, math, sys, time
from pathlib import Path
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from dpnotebooks.core.backend import available_backends, use_backend, get_xp, make_rng
from dpnotebooks.experiments.bench import bench_zo, machine, measure

def _ms(t): return f"{t * 1e3:.3g}"

def zo_rows(rows, d, m, b, repeat, chunks, have_gpu, numpy_repeat):
    "Into `rows`: the estimator (and its increment) against its unavoidable work: numpy float64, cupy float64 and float32, larger blocks on cupy."
    for problem in ("robust-regression", "relu-net"):
        for be, dt, rep, ch, inc in ([("numpy", "float64", numpy_repeat, chunks[0], False)] * (numpy_repeat > 0) +
                                     ([("cupy", "float64", repeat, c, False) for c in chunks] + [("cupy", "float32", repeat, chunks[0], False),
                                       ("cupy", "float64", repeat, chunks[0], True)] if have_gpu else [])):
            with use_backend(be, dt):
                r = bench_zo(problem, d, m, b, repeat=rep, chunk=ch, increment=inc)
            rows.append(dict(r, backend=be, dtype=dt, chunk=ch)); print(f"zo {problem} {be} {dt} chunk 2^{int(math.log2(ch))}{' increment' if inc else ''}: "
                                                                       f"{_ms(r['step']['median'])} ms (unavoidable {_ms(r['unavoidable']['median'])} ms)", flush=True)

def gemm_rows(d, m, b, repeat, dtype):
    "cuBLAS on the estimator's shapes: the batched product (b, m, d)·(b, d, 1) on drawn directions, one GEMM (m, d)·(d, b), and the draw alone."
    with use_backend("cupy", dtype):
        xp, rng = get_xp(), make_rng(0)
        A = rng.normal((b, d)); U = rng.sphere((b, m), d); Us = U[0, ...]
        out = dict(dtype=dtype, d=d, m=m, b=b,
                   batched=measure(lambda: xp.matmul(U, A[:, :, None]), repeat, 1),              # the estimator's product, directions given
                   gemm=measure(lambda: xp.matmul(Us, A.T), repeat, 1),                          # (m, d)·(d, b): directions shared by the batch
                   draw=measure(lambda: rng.child(1).sphere((b, m), d), repeat, 1))               # b·m·d normals and their norms
        gemm_flops = 2.0 * m * d * b
        out["gemm_tflops"] = gemm_flops / out["gemm"]["median"] / 1e12
        out["draw_gbytes_per_s"] = b * m * d * np.dtype(dtype).itemsize / out["draw"]["median"] / 1e9
    print(f"cuBLAS {dtype}: batched {_ms(out['batched']['median'])} ms, GEMM {_ms(out['gemm']['median'])} ms, draw {_ms(out['draw']['median'])} ms", flush=True)
    return out

def generator_rows(repeat):
    "Seconds per cupy draw of 64 numbers and of 2^24: cupy's default generator (XORWOW, set up on every draw) against Philox."
    import cupy
    from cupy.cuda import curand
    Original, out = cupy.random.RandomState, []
    for method in ("xorwow", "philox"):
        if method == "philox": cupy.random.RandomState = lambda seed=None: Original(seed, method=curand.CURAND_RNG_PSEUDO_PHILOX4_32_10)
        try:
            with use_backend("cupy"):
                rng = make_rng(0)
                for size in (64, 2**24):
                    out.append(dict(method=method, size=size, t=measure(lambda: rng.normal(size), repeat, 2)))
                    print(f"cupy draw {method} {size}: {_ms(out[-1]['t']['median'])} ms", flush=True)
        finally: cupy.random.RandomState = Original
    return out

def philox_zo(d, m, b, repeat, chunk):
    "The robust-regression estimator on cupy with Philox in place of XORWOW (same code, the generator patched)."
    import cupy
    from cupy.cuda import curand
    Original = cupy.random.RandomState
    cupy.random.RandomState = lambda seed=None: Original(seed, method=curand.CURAND_RNG_PSEUDO_PHILOX4_32_10)
    try:
        with use_backend("cupy"): r = bench_zo("robust-regression", d, m, b, repeat=repeat, chunk=chunk)
    finally: cupy.random.RandomState = Original
    print(f"zo robust-regression cupy philox chunk 2^{int(math.log2(chunk))}: {_ms(r['step']['median'])} ms", flush=True)
    return dict(r, backend="cupy", dtype="float64", chunk=chunk, generator="philox")

def torch_rows(p, hidden, batches, repeat):
    "from_torch's ghost clipped sum and per-sample gradients on CUDA and on the CPU, against one batched forward+backward on CUDA."
    import torch
    from dpnotebooks.problems.losses import from_torch
    from dpnotebooks.problems.dataset import Dataset
    rows, bce = [], torch.nn.functional.binary_cross_entropy_with_logits
    for b in batches:
        r = np.random.default_rng(b); A = r.normal(size=(b, p)); A /= np.linalg.norm(A, axis=1, keepdims=True); y = (r.random(b) < 0.5) * 1.0
        torch.manual_seed(0); net = torch.nn.Sequential(torch.nn.Linear(p, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 1))
        row = dict(p=p, hidden=hidden, b=b)
        for dev in ("cuda", "cpu"):
            q = from_torch(net, Dataset(A, y), L=1.0, loss=bce, device=dev); x = q.x0 + 0.01; data = q.data
            sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
            def timed(fn):
                def run(): fn(); sync()
                return measure(run, repeat, 2)
            row[f"clipped_sum_{dev}"] = timed(lambda: q.clipped_sum(x, data, 1.0))
            row[f"grad_each_{dev}"] = timed(lambda: q.grad_each(np.broadcast_to(x, (b, 1, q.dim)), data))
            row[f"ghost_grads_{dev}"] = timed(lambda: q._fns["clipped_sum"].grads(x, A, y))     # the forward+backward part of the ghost sum
        m = net.to("cuda", torch.float64); At, yt = torch.as_tensor(A, device="cuda"), torch.as_tensor(y, device="cuda")
        def fwd_bwd():
            m.zero_grad(); bce(m(At).squeeze(-1), yt, reduction="sum").backward(); torch.cuda.synchronize()
        row["forward_backward_cuda"] = measure(fwd_bwd, repeat, 2)
        rows.append(row)
        print(f"torch b={b}: ghost sum cuda {_ms(row['clipped_sum_cuda']['median'])} ms, cpu {_ms(row['clipped_sum_cpu']['median'])} ms; "
              f"fwd+bwd cuda {_ms(row['forward_backward_cuda']['median'])} ms", flush=True)
    return rows

def suite_rows(limit):
    "Every job of `dpnb bench --quick` on cupy, end-to-end runs first, each stopped after `limit` seconds (SIGALRM): which run, which are slow."
    import signal
    from dpnotebooks.experiments.bench import GRIDS, _suite_jobs, _run_job
    from dpnotebooks.planning.catalog import ALGORITHMS
    import dpnotebooks.algorithms.smooth_algorithms, dpnotebooks.algorithms.sosp_algorithm  # noqa: F401 (registers them)
    g = GRIDS["quick"]; jobs = _suite_jobs(g, ["cupy"], ["float64"], list(ALGORITHMS))
    def alarm(*_): raise TimeoutError(f"over the {limit} s limit per job")
    old, rows = signal.signal(signal.SIGALRM, alarm), []
    try:
        for j in [j for j in jobs if j[2] == "e2e"] + [j for j in jobs if j[2] != "e2e"]:
            t = time.perf_counter(); signal.alarm(limit)
            try: _run_job(g, *j); result = "ran to the end"
            except Exception as e: result = f"{type(e).__name__}: {str(e)[:200]}"
            finally: signal.alarm(0)
            rows.append(dict(kind=j[2], args=repr(j[3]), seconds=time.perf_counter() - t, result=result)); print(rows[-1], flush=True)
    finally: signal.signal(signal.SIGALRM, old)
    return rows

def markdown(res) -> str:
    "gpu.md: the machine, then one table per section."
    L = ["# GPU benchmarks (issue 24 §5)", "", f"Written by `{res['command']}`; do not edit by hand.", "", "| machine | |", "|---|---|"]
    L += [f"| {k} | {v} |" for k, v in res["machine"].items()] + [""]
    zo = res.get("zo", [])
    if zo:
        L += ["## Zeroth-order estimator, d = m = %d, b = %d" % (zo[0]["d"], zo[0]["b"]), "",
              "Per-sample directions: b·m·d normals a step. *unavoidable*: the same directions drawn and the same products, nothing else.", "",
              "| problem | backend | dtype | block (floats) | step ms | unavoidable ms | ratio | numpy ÷ this |", "|---|---|---|---|---|---|---|---|"]
        ref = {r["problem"]: r["step"]["median"] for r in zo if r["backend"] == "numpy"}
        for r in zo:
            base = ref.get(r["problem"].replace(" (increment)", ""))
            sp = f"{base / r['step']['median']:.1f}" if base and "increment" not in r["problem"] else "–"
            L.append(f"| {r['problem']}{' (Philox)' if r.get('generator') else ''} | {r['backend']} | {r['dtype']} | 2^{int(math.log2(r['chunk']))} | "
                     f"{_ms(r['step']['median'])} | {_ms(r['unavoidable']['median'])} | {r['ratio']:.2f} | {sp} |")
        L.append("")
    for g in res.get("gemm", []):
        est = [r for r in zo if r["backend"] == "cupy" and r["dtype"] == g["dtype"] and r["problem"] == "robust-regression" and not r.get("generator")]
        best = min((r["step"]["median"] for r in est), default=None)
        L += [f"## cuBLAS on the estimator's shapes ({g['dtype']}, d = m = {g['d']}, b = {g['b']})", "",
              "| work | ms | estimator ÷ this |", "|---|---|---|"]
        for k, what in (("batched", "batched product (b, m, d)·(b, d, 1), directions given"), ("gemm", "one GEMM (m, d)·(d, b): directions shared by the batch"),
                        ("draw", "drawing the b·m·d directions (normals and their norms)")):
            L.append(f"| {what} | {_ms(g[k]['median'])} | {best / g[k]['median']:.1f} |" if best else f"| {what} | {_ms(g[k]['median'])} | – |")
        L += ["", f"GEMM rate {g['gemm_tflops']:.1f} TFLOP/s; direction draw {g['draw_gbytes_per_s']:.0f} GB/s written.", ""]
    if res.get("generator"):
        L += ["## cupy's generator, per draw", "", "| generator | numbers | ms |", "|---|---|---|"]
        L += [f"| {r['method']} | {r['size']} | {_ms(r['t']['median'])} |" for r in res["generator"]] + [""]
    if res.get("torch"):
        L += ["## PyTorch adapter on CUDA: MLP p-h-1, float64", "",
              "| b | ghost clipped sum, CUDA ms | ÷ fwd+bwd | its forward+backward part, CUDA ms | ghost sum, CPU ms | grad_each CUDA ms | grad_each CPU ms | fwd+bwd CUDA ms (data on device) |",
              "|---|---|---|---|---|---|---|---|"]
        for r in res["torch"]:
            fb = r["forward_backward_cuda"]["median"]
            L.append(f"| {r['b']} | {_ms(r['clipped_sum_cuda']['median'])} | {r['clipped_sum_cuda']['median'] / fb:.2f} | "
                     f"{_ms(r['ghost_grads_cuda']['median']) if 'ghost_grads_cuda' in r else '–'} | {_ms(r['clipped_sum_cpu']['median'])} | "
                     f"{_ms(r['grad_each_cuda']['median'])} | {_ms(r['grad_each_cpu']['median'])} | {_ms(fb)} |")
        L.append("")
    if res.get("suite"):
        L += ["## `dpnb bench --quick`'s jobs on cupy", "", "| job | arguments | seconds | result |", "|---|---|---|---|"]
        L += [f"| {r['kind']} | {r['args']} | {r['seconds']:.2f} | {r['result']} |" for r in res["suite"]] + [""]
    for k, v in res.get("skipped", {}).items(): L.append(f"- {k} skipped: {v}")
    for k, v in res.get("errors", {}).items(): L.append(f"- {k} failed: {v.strip().splitlines()[-1]}")
    return "\n".join(L) + "\n"

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="gpu-bench", help="output directory (gpu.json, gpu.md)")
    ap.add_argument("--quick", action="store_true", help="small shapes: check the script, not the GPU")
    ap.add_argument("--repeat", type=int, default=5); ap.add_argument("--b", type=int, default=8, help="batch of the estimator rows")
    ap.add_argument("--sections", default="zo,gemm,generator,torch", help="any of zo,gemm,generator,torch,suite")
    ap.add_argument("--job-limit", type=int, default=10, help="suite: seconds per job")
    ap.add_argument("--skip-numpy", action="store_true", help="no numpy estimator rows (they take a minute at d = m = 4096)")
    a = ap.parse_args(argv)
    d = m = 256 if a.quick else 4096
    chunks = [2**22] if a.quick else [2**22, 2**24, 2**26]
    have_gpu, sections = "cupy" in available_backends(), a.sections.split(",")
    res = dict(command="python benchmarks/gpu.py " + " ".join(argv if argv is not None else sys.argv[1:]), machine=machine(), skipped={})
    out = Path(a.out); out.mkdir(parents=True, exist_ok=True)
    def save():
        (out / "gpu.json").write_text(json.dumps(res, indent=1)); (out / "gpu.md").write_text(markdown(res))
    if not have_gpu: res["skipped"]["cupy rows"] = "no usable CUDA GPU with cupy here: numpy rows only, no GPU figure"
    t0 = time.time()
    def section(name, fn):
        "Run one section; an error is written down with its traceback and the next section runs."
        try: return fn()
        except Exception:
            import traceback; res.setdefault("errors", {})[name] = traceback.format_exc(); print(res["errors"][name], flush=True)
        finally: save()
    if "zo" in sections:
        res["zo"] = []; section("zo", lambda: zo_rows(res["zo"], d, m, a.b, a.repeat, chunks, have_gpu, 0 if a.skip_numpy else 2 if not a.quick else a.repeat))
        if have_gpu:
            r = section("zo philox", lambda: philox_zo(d, m, a.b, a.repeat, chunks[0]))
            if r: res["zo"].append(r)
    if have_gpu and "gemm" in sections: res["gemm"] = [g for dt in ("float64", "float32") if (g := section(f"gemm {dt}", lambda: gemm_rows(d, m, a.b, a.repeat, dt)))]
    if have_gpu and "generator" in sections: res["generator"] = section("generator", lambda: generator_rows(a.repeat)) or []
    if "torch" in sections:
        try:
            import torch
            if torch.cuda.is_available(): res["torch"] = section("torch", lambda: torch_rows(30, 32, [64, 256, 1024, 4096] if not a.quick else [64], a.repeat)) or []
            else: res["skipped"]["torch rows"] = "torch sees no CUDA GPU"
        except ImportError: res["skipped"]["torch rows"] = "torch is not installed"
    if have_gpu and "suite" in sections: res["suite"] = section("suite", lambda: suite_rows(a.job_limit)) or []
    res["seconds"] = time.time() - t0; save()
    print(markdown(res))

if __name__ == "__main__": main()
