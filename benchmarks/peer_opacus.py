"""DP-SGD side by side with Opacus (issue 24 §1, §3, §4): samples per second of one epoch on the MLP d-32-1 (ReLU, biases,
logistic loss), breast-cancer (n = 398 training rows, d = 30) and digits (n = 1257, d = 64), batch 64/256/1024, the same
thread count for both, interleaved repeats, median and spread, the ratios in one run; one short private training run end
to end (calibration included) for both; and the per-sample gradients of the built-in models and of the torch/JAX adapters
against one batched forward+backward of the same shapes.

    .venv/bin/python benchmarks/peer_opacus.py [--quick] [--threads 2] [--repeat 7] [--out peer-opacus.md] [--device cuda]

Opacus and torch are optional, benchmark-only dependencies (`pip install 'dpnotebooks[bench]'`); without them the
Opacus columns say so and the rest runs. OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are removed from this process's
environment before numpy loads (re-executing itself if numpy was already imported), and the report says so.
"""
import os, sys

_BLAS_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")

def _clean_environment(threads:int) -> list:
    "Unset the OpenBLAS overrides and fix the thread counts before numpy loads (re-exec if it already has); the names unset."
    found = [k for k in _BLAS_VARS if k in os.environ]
    unset = [k for k in os.environ.get("DPNB_PEER_UNSET", "").split(",") if k]
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"): os.environ[k] = str(threads)
    if found and "numpy" in sys.modules:          # too late for this process: start again without them
        env = {k: v for k, v in os.environ.items() if k not in _BLAS_VARS}
        env["DPNB_PEER_UNSET"] = ",".join(found + unset)
        os.execve(sys.executable, [sys.executable] + sys.argv, env)
    for k in found: del os.environ[k]
    return found + unset

def _threads_arg() -> int:
    return int(sys.argv[sys.argv.index("--threads") + 1]) if "--threads" in sys.argv else 2

UNSET = _clean_environment(_threads_arg()) if __name__ == "__main__" else []   # imported (tests): leave the caller's process alone

import argparse, math, platform, subprocess, time, warnings
from pathlib import Path
import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits
from dpnotebooks.core.backend import use_backend, asarray, to_numpy
from dpnotebooks.problems.base import Logistic
from dpnotebooks.problems.dataset import Dataset
from dpnotebooks.algorithms.dpsgd import MLP, dp_sgd
from dpnotebooks.experiments.utility import utility_task

HIDDEN, CLIP, SIGMA, LR = 32, 1.0, 1.0, 0.5
DEVICE = "cpu"   # --device: 'cpu' (numpy; Opacus on the CPU) or 'cuda' (cupy; Opacus's model and data on the GPU)
OURS = "fused"   # --ours: 'fused' (MLP.clipped_sum), 'materialized' (MLP.grad_each + clip_rows) or 'jax' (from_jax, 63_utility's MLP)

class _Materialized(MLP): clipped_sum = None

def our_mlp(task):
    "The MLP d-32-1 of `--ours` on the task's training split."
    if OURS == "jax": return jax_mlp(task.train)
    data = Dataset(to_numpy(task.train.A), to_numpy(task.train.y), task.name)   # in the active dtype (float32 when asked)
    return (MLP if OURS == "fused" else _Materialized)(data, hidden=HIDDEN)

def jax_mlp(train):
    "The MLP d-32-1 written in JAX (W1, b1, w2, b2; He init from the key 0; logistic loss on 0/1 labels) through `from_jax`."
    import jax, jax.numpy as jnp
    from dpnotebooks.problems.losses import from_jax
    d = train.p; k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    q = dict(W1=jax.random.normal(k1, (d, HIDDEN)) * jnp.sqrt(2 / d), b1=jnp.zeros(HIDDEN), w2=jax.random.normal(k2, (HIDDEN,)) / jnp.sqrt(HIDDEN), b2=jnp.zeros(()))
    def bce(q, a, t):
        z = jnp.maximum(a @ q["W1"] + q["b1"], 0) @ q["w2"] + q["b2"]
        return jnp.logaddexp(0.0, z) - t * z
    return from_jax(bce, q, (to_numpy(train.A), (to_numpy(train.y) > 0).astype(float)), L=1.0)

def _have(mod:str) -> bool:
    try: __import__(mod); return True
    except ImportError: return False

# ---------------------------------------------------------------- timing

def _stats(ts:list) -> dict:
    q25, q50, q75 = np.percentile(ts, [25, 50, 75])
    return dict(median=float(q50), q25=float(q25), q75=float(q75), n=len(ts), times=list(ts))

def block_ratios(a:dict, b:dict, blocks:int=10) -> tuple:
    "Ratio of medians a/b within each of `blocks` consecutive stretches of interleaved repeats: (median, min, max) over the stretches."
    blocks = max(1, min(blocks, len(a["times"]), len(b["times"])))
    ta, tb = np.array_split(np.asarray(a["times"]), blocks), np.array_split(np.asarray(b["times"]), blocks)
    r = [np.median(x) / np.median(y) for x, y in zip(ta, tb)]
    return float(np.median(r)), float(np.min(r)), float(np.max(r))

def interleaved(fns:dict, repeat:int, warmup:int=1) -> dict:
    "Seconds of each callable, run in turns (a, b, c, a, b, c, …) so that machine noise hits all of them alike."
    for _ in range(warmup):
        for f in fns.values(): f()
    ts = {k: [] for k in fns}
    for _ in range(repeat):
        for k, f in fns.items():
            t0 = time.perf_counter(); f(); ts[k].append(time.perf_counter() - t0)
    return {k: _stats(v) for k, v in ts.items()}

# ---------------------------------------------------------------- dpnotebooks side

def poisson_epoch(n:int, B:int) -> tuple:
    "(steps, expected batch) of one Poisson epoch as Opacus's DPDataLoader makes it: ⌈n/B⌉ steps at rate 1/⌈n/B⌉ (≈ n samples)."
    steps = math.ceil(n / B)
    return steps, max(1, round(n / steps))

def _backend() -> str: return "cupy" if DEVICE == "cuda" else "numpy"

def _sync():
    "Wait for the GPU, so that a timer sees the work and not its launch (nothing on the CPU)."
    if DEVICE != "cuda": return
    import torch, cupy
    cupy.cuda.Device().synchronize(); torch.cuda.synchronize()

def ours_epoch(task, B:int, alpha:float, dtype:str, seed:int=0):
    "One DP-SGD epoch (Poisson sampling, Opacus's steps and rate) on dpnotebooks' MLP, in `dtype`, on numpy (or cupy with --device cuda)."
    steps, q_n = poisson_epoch(len(task.train), B)
    def run():
        with use_backend(_backend(), dtype):
            p = our_mlp(task)
            dp_sgd(p, p.data, steps, q_n, LR, CLIP, SIGMA, alpha=alpha, sampling="poisson", rng=seed); _sync()
    return run

def clear_caches():
    "Forget every memoized calibration and accountant query (the lru_caches of every loaded dpnotebooks module): a cold run."
    for name, mod in list(sys.modules.items()):
        if name.startswith("dpnotebooks") and mod is not None:
            for f in vars(mod).values():
                if callable(getattr(f, "cache_clear", None)): f.cache_clear()

def ours_end_to_end(task, epsilon:float, delta:float, epochs:int, B:int):
    "A short private run through `minimize`, cold (caches cleared): plan, noise calibration, training (float64, α = 0)."
    from dpnotebooks.planning.minimize import minimize
    def run():
        clear_caches()
        with use_backend(_backend()):
            p = our_mlp(task)
            minimize(p, "dp-sgd", epsilon=epsilon, delta=delta, alpha=0.0, seed=0, batch_size=B, epochs=epochs); _sync()
    return run

# ---------------------------------------------------------------- Opacus side

def _torch_mlp(torch, d:int):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(d, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, 1)).to(DEVICE)

def _loader(torch, task, B:int):
    A = torch.as_tensor(to_numpy(task.train.A), dtype=torch.float32, device=DEVICE)
    y = torch.as_tensor((to_numpy(task.train.y) > 0).astype(np.float32), device=DEVICE)
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(A, y), batch_size=B)

def _train(torch, model, opt, loader):
    lossf = torch.nn.BCEWithLogitsLoss()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # Opacus's hooks warn that the inputs need no gradient
        for xb, yb in loader:
            if len(xb) == 0: continue
            opt.zero_grad(); lossf(model(xb).squeeze(-1), yb).backward(); opt.step()

def opacus_epoch(task, B:int):
    "One Opacus epoch: make_private (Poisson sampling, noise multiplier 1, clip 1) set up once, then timed epochs."
    import torch
    from opacus import PrivacyEngine
    model = _torch_mlp(torch, task.train.p)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, opt, loader = PrivacyEngine().make_private(module=model, optimizer=opt, data_loader=_loader(torch, task, B),
                                                          noise_multiplier=SIGMA, max_grad_norm=CLIP, poisson_sampling=True)
    return lambda: (_train(torch, model, opt, loader), _sync())

def opacus_end_to_end(task, epsilon:float, delta:float, epochs:int, B:int):
    "A short private run with Opacus: make_private_with_epsilon (its calibration) and the training epochs."
    import torch
    from opacus import PrivacyEngine
    def run():
        model = _torch_mlp(torch, task.train.p); opt = torch.optim.SGD(model.parameters(), lr=LR)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model, opt, loader = PrivacyEngine(accountant="prv").make_private_with_epsilon(
                module=model, optimizer=opt, data_loader=_loader(torch, task, B), target_epsilon=epsilon, target_delta=delta,
                epochs=epochs, max_grad_norm=CLIP, poisson_sampling=True)
            for _ in range(epochs): _train(torch, model, opt, loader)
            _sync()
    return run

# ---------------------------------------------------------------- per-sample gradients against one forward+backward

def grad_rows(task, B:int, repeat:int, adapters:bool=True) -> list:
    "Per-sample gradients (materialized, and the fused clipped sum) against one batched gradient of the same shapes."
    rows, sub = [], task.train[:B]
    for dtype in ("float64", "float32"):
        with use_backend("numpy", dtype):
            data = Dataset(to_numpy(task.train.A), to_numpy(task.train.y))                 # in the active dtype
            mlp, lin = MLP(data, hidden=HIDDEN), Logistic(data)
            bt = Dataset(asarray(to_numpy(sub.A)), asarray(to_numpy(sub.y)))
            for name, p in (("MLP (built-in)", mlp), ("logistic (built-in, linear)", lin)):
                x = asarray(p.x0) + 0.01
                Xe = x[None, None, :] + 0 * asarray(np.zeros((B, 1, 1)))
                each, batched = (lambda: p.grad_each(Xe, bt)), (lambda: p.full_grad(x[None, :], bt))
                t = (_paired(batched, lambda: p.clipped_sum(x, bt, CLIP), each, repeat) if hasattr(p, "clipped_sum") else
                     interleaved(dict(each=each, batched=batched), repeat, warmup=repeat // 10))
                rows.append(_row(name, dtype, B, p.dim, t))
    return rows + (_adapter_rows(task, B, repeat) if adapters else [])

def _row(model:str, dtype:str, B:int, d:int, t:dict) -> dict:
    "One table row: the medians, and the fused ratio's spread over stretches of the interleaved repeats."
    row = dict(model=model, dtype=dtype, B=B, d=d, **{k: v["median"] for k, v in t.items()})
    if "fused" in t: row["fused_blocks"] = block_ratios(t["fused"], t["batched"])
    return row

def _paired(batched, fused, each, repeat:int, **more) -> dict:
    "batched, fused (and `more` references) interleaved after a warm-up (a process's first calls run cold); the slow materialized `each` timed apart (a 1-10 ms call just before leaves the next one cold)."
    return {**interleaved(dict(batched=batched, fused=fused, **more), repeat, warmup=repeat // 10), **interleaved(dict(each=each), max(5, repeat // 10))}

def _adapter_rows(task, B:int, repeat:int) -> list:
    "from_torch / from_jax per-sample gradients (vmap(grad)) against one batched forward+backward in the same framework."
    out, A, y = [], to_numpy(task.train.A[:B]), to_numpy(task.train.y[:B])
    data = (to_numpy(task.train.A), to_numpy(task.train.y))
    if _have("torch"):
        import torch
        from dpnotebooks.problems.losses import from_torch
        net = _torch_mlp(torch, task.train.p).double()
        lossf = lambda o, t: torch.nn.functional.softplus(-t * o)
        p = from_torch(net, data, L=1.0, loss=lossf)
        x = p.x0 + 0.01; bt = Dataset(A, y)
        At, yt = torch.as_tensor(A), torch.as_tensor(y)
        def batched():
            net.zero_grad(); lossf(net(At).squeeze(-1), yt).mean().backward()
        t = _paired(batched, lambda: p.clipped_sum(x, bt, CLIP), lambda: p.grad_each(np.broadcast_to(x, (B, 1, p.dim)), bt), repeat)
        out.append(_row("MLP via from_torch", "float64", B, p.dim, t))
    if _have("jax"):
        import jax, jax.numpy as jnp
        p = jax_mlp(task.train)
        x = p.x0 + 0.01; bt = Dataset(A, (y > 0).astype(float))
        g = jax.jit(jax.grad(lambda q, A_, t_: jnp.mean(jax.vmap(lambda a, t: _jax_bce(p, q, a, t))(A_, t_))))
        xj, Aj, tj = jnp.asarray(x), jnp.asarray(A), jnp.asarray(bt.y)             # device arrays in, no host copies: the
        batched = lambda: g(xj, Aj, tj).block_until_ready()                         # cheapest reference (ours takes numpy)
        from_host = lambda: np.asarray(g(x, A, bt.y))                               # like ours: numpy in, numpy out
        t = _paired(batched, lambda: p.clipped_sum(x, bt, CLIP), lambda: p.grad_each(np.broadcast_to(x, (B, 1, p.dim)), bt), repeat,
                    from_host=from_host, on_device=lambda: p._fns["clipped_sum"].packed(xj, Aj, tj, CLIP).block_until_ready())
        out.append(_row("MLP via from_jax (ours from numpy, reference on device arrays)", "float64", B, p.dim, t))
        out.append(_row("MLP via from_jax (both from numpy, as DP-SGD calls it)", "float64", B, p.dim, {**t, "batched": t["from_host"]}))
        out.append(_row("MLP via from_jax (both on device arrays)", "float64", B, p.dim, {**t, "fused": t["on_device"]}))
    return out

def _jax_bce(p, x, a, t):
    import jax.numpy as jnp
    q = p.unflatten(x)
    z = jnp.maximum(a @ q["W1"] + q["b1"], 0) @ q["w2"] + q["b2"]
    return jnp.logaddexp(0.0, z) - t * z

# ---------------------------------------------------------------- the machine

def machine(threads:int) -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"): cpu = line.split(":", 1)[1].strip(); break
    except OSError: pass
    blas = "; ".join(f"{i.get('internal_api')} {i.get('version')} ({i.get('architecture')}, {i.get('num_threads')} threads)"
                     for i in threadpool_info() if i.get("user_api") == "blas") or "unknown"
    out = dict(cpu=cpu, cores=os.cpu_count(), threads=threads, numpy=np.__version__, blas_kernel=blas,
               unset=", ".join(UNSET) if UNSET else f"none set ({', '.join(_BLAS_VARS)} absent)",
               load=" ".join(f"{x:.2f}" for x in os.getloadavg()), gpu="no GPU was available: no GPU rows measured")
    if DEVICE == "cuda":
        import torch, cupy; out["gpu"] = f"{torch.cuda.get_device_name(0)}: dpnotebooks on cupy {cupy.__version__}, Opacus's model and data on CUDA"
    if _have("torch"):
        import torch; out["torch"] = f"{torch.__version__} ({torch.get_num_threads()} threads)"
    if _have("opacus"):
        import opacus; out["opacus"] = opacus.__version__
    return out

# ---------------------------------------------------------------- a PyTorch user's own model: Opacus' two modes against from_torch

MODEL_STEPS = 30   # private steps per timed call, Poisson batches at rate B/n for all three

def model_task(kind:str) -> tuple:
    "(features (n, p) float32 rows in the unit ball, ±1 labels, a builder of the torch model): 'mlp' 100-256-256-1 on 20,000 rows, 'cnn' two 3×3 convolutions on 16×16 images (10,000 rows)."
    import torch
    nn = torch.nn
    n, p = (20000, 100) if kind == "mlp" else (10000, 256)
    rs = np.random.default_rng(0); A = rs.normal(size=(n, p)).astype(np.float32); A /= np.linalg.norm(A, axis=1, keepdims=True)
    y = np.sign(rs.normal(size=n)).astype(np.float32)
    if kind == "mlp": make = lambda: nn.Sequential(nn.Linear(p, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1))
    else: make = lambda: nn.Sequential(nn.Unflatten(1, (1, 16, 16)), nn.Conv2d(1, 8, 3), nn.ReLU(), nn.Conv2d(8, 16, 3), nn.ReLU(), nn.Flatten(), nn.Linear(16 * 12 * 12, 1))
    return A, y, make

def opacus_steps(kind:str, B:int, mode:str):
    "MODEL_STEPS private steps of Opacus (`hooks` or `ghost`: grad_sample_mode), noise multiplier 1, clip 1, Poisson batches of B expected rows."
    import torch
    from opacus import PrivacyEngine
    A, y, make = model_task(kind)
    torch.manual_seed(0); model = make(); opt = torch.optim.SGD(model.parameters(), lr=LR)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.as_tensor(A), torch.as_tensor((y > 0).astype(np.float32))), batch_size=B)
    crit = torch.nn.BCEWithLogitsLoss()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if mode == "ghost": model, opt, crit, loader = PrivacyEngine().make_private(module=model, optimizer=opt, criterion=crit, data_loader=loader, noise_multiplier=SIGMA,
                                                                                      max_grad_norm=CLIP, poisson_sampling=True, grad_sample_mode="ghost")
        else: model, opt, loader = PrivacyEngine().make_private(module=model, optimizer=opt, data_loader=loader, noise_multiplier=SIGMA, max_grad_norm=CLIP, poisson_sampling=True)
    def run():
        k = 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            while k < MODEL_STEPS:
                for xb, yb in loader:
                    if len(xb) == 0: continue
                    opt.zero_grad(); crit(model(xb).squeeze(-1), yb).backward(); opt.step(); k += 1
                    if k == MODEL_STEPS: break
        _sync()
    return run

def ours_steps(kind:str, B:int):
    "MODEL_STEPS steps of dp_sgd on `from_torch(model, dtype='float32')` (ghost clipping, `04j_torch_ghost`): the same noise multiplier, clip and Poisson rate."
    import torch
    from dpnotebooks.problems.losses import from_torch
    A, y, make = model_task(kind)
    torch.manual_seed(0)
    prob = from_torch(make(), (A.astype(np.float64), y.astype(np.float64)), L=CLIP, loss=lambda o, t: torch.nn.functional.softplus(-t * o), dtype="float32")
    def run():
        with use_backend("numpy", "float64"): dp_sgd(prob, prob.data, MODEL_STEPS, B, LR, CLIP, SIGMA, sampling="poisson", rng=0)
    return run, prob.clipping_path

MEMORY_PROBES = 3   # fresh processes per mode; the median is reported (one probe's peak varies by tens of MiB with the allocator's caching)

def peak_memory(kind:str, B:int, mode:str) -> float:
    "MiB the process's peak resident memory grows by over MODEL_STEPS steps after the setup: the median of MEMORY_PROBES fresh processes."
    peaks = []
    for _ in range(MEMORY_PROBES):
        out = subprocess.run([sys.executable, __file__, "--memory-probe", f"{kind},{B},{mode}", "--threads", str(_threads_arg())], capture_output=True, text=True)
        if out.returncode: raise RuntimeError(out.stderr[-2000:])
        peaks.append(float(out.stdout.strip().splitlines()[-1]))
    return float(np.median(peaks))

def _rss() -> int:
    "Resident bytes of this process now (/proc/self/statm)."
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")

def _memory_probe(spec:str) -> None:
    "Print the peak resident memory above the level before the steps (MiB), sampled every millisecond while they run."
    import threading, torch
    kind, B, mode = spec.split(","); torch.set_num_threads(_threads_arg())
    run = ours_steps(kind, int(B))[0] if mode == "ours" else opacus_steps(kind, int(B), mode)
    before, peak, done = _rss(), [0], threading.Event()
    def watch():
        while not done.is_set(): peak[0] = max(peak[0], _rss()); time.sleep(0.001)
    w = threading.Thread(target=watch); w.start()
    try: run()
    finally: done.set(); w.join()
    print(max(peak[0], _rss()) - before >> 20)

def model_table(batches, repeat:int) -> list:
    head = ["model", "B", "Opacus hooks", "Opacus ghost", "dpnotebooks from_torch", "ratio to Opacus' faster", "peak MiB: hooks / ghost / ours"]
    lines = ["## A PyTorch user's own model: samples per second of private steps, median (q25–q75)", "",
             f"{MODEL_STEPS} DP-SGD steps per timed call (Poisson batches of B expected rows, noise multiplier 1, clip 1, float32 models), the three "
             "interleaved. Opacus: `make_private` with `grad_sample_mode` hooks (materialized per-sample gradients) and ghost (norms, then a second "
             "backward). dpnotebooks: `dp_sgd` on `from_torch(model, dtype='float32')`, ghost clipping's layer rules (`04j_torch_ghost`; the noise "
             "is drawn in float64, as for every run). Models: MLP 100-256-256-1 on 20,000 rows; CNN `Conv2d(1, 8, 3)`, `Conv2d(8, 16, 3)`, ReLUs, "
             "a linear head, on 16×16 images (10,000 rows). Peak memory: the resident memory's peak over the steps above its level before them "
             f"(sampled every millisecond), in a fresh process, the median of {MEMORY_PROBES}. Targets: ratio ≥ 1.5 at B = 256, ≥ 1 at B = 64 and 1024, peak memory ≤ Opacus ghost's.", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    if not (_have("torch") and _have("opacus")): return lines + ["| torch or opacus not installed: nothing measured | | | | | | |", ""]
    for kind in ("mlp", "cnn"):
        for B in batches:
            ours, path = ours_steps(kind, B)
            t = interleaved({"hooks": opacus_steps(kind, B, "hooks"), "ghost": opacus_steps(kind, B, "ghost"), "ours": ours}, repeat)
            sps = {k: f"{_f(MODEL_STEPS * B / v['median'])} ({_f(MODEL_STEPS * B / v['q75'])}–{_f(MODEL_STEPS * B / v['q25'])})" for k, v in t.items()}
            best = min(("hooks", "ghost"), key=lambda k: t[k]["median"])
            mem = " / ".join(f"{peak_memory(kind, B, m):.0f}" for m in ("hooks", "ghost", "ours"))
            lines.append(f"| {kind} ({path}) | {B} | {sps['hooks']} | {sps['ghost']} | {sps['ours']} | {t[best]['median'] / t['ours']['median']:.2f}× ({best}) | {mem} |")
            print(lines[-1], flush=True)
    return lines + [""]

# ---------------------------------------------------------------- the report

def _f(x): return f"{x:,.0f}"
def _sps(n, t): return f"{_f(n / t['median'])} ({_f(n / t['q75'])}–{_f(n / t['q25'])})"

def epoch_table(tasks, batches, repeat:int) -> list:
    have = _have("opacus")
    head = ["task", "n", "B", "dpnotebooks α=0 f64", "α=0 f32", "α=0.1 f64", "α=0.1 f32", "Opacus (f32)",
            "ratio α=0 f64", "ratio α=0 f32", "ratio α=0.1 f64", "ratio α=0.1 f32"]
    lines = ["## One DP-SGD epoch: samples per second, median (q25–q75)", "",
             f"Poisson sampling as Opacus's DPDataLoader does it (⌈n/B⌉ steps at rate 1/⌈n/B⌉: about n samples an epoch, so samples/s = n / seconds for both), noise multiplier 1, clip 1; dpnotebooks' MLP: `--ours {OURS}`; ratio = dpnotebooks / Opacus "
             "(medians). Unavoidable work of a step: one forward and one backward of the batch (Opacus materializes the per-sample "
             "gradients; dpnotebooks forms only their norms).", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for task in tasks:
        n = len(task.train)
        for B in batches:
            if B > n: lines.append(f"| {task.name} | {n} | {B} | " + " | ".join(["n/a: B > n"] * (len(head) - 3)) + " |"); continue
            fns = {(a, dt): ours_epoch(task, B, a, dt) for a in (0.0, 0.1) for dt in ("float64", "float32")}
            if have: fns["opacus"] = opacus_epoch(task, B)
            t = interleaved(fns, repeat)
            ours = [t[(a, dt)] for a in (0.0, 0.1) for dt in ("float64", "float32")]
            op = t.get("opacus")
            ratios = [f"{op['median'] / o['median']:.2f}×" if op else "n/a" for o in ours]
            lines.append(f"| {task.name} | {n} | {B} | " + " | ".join(_sps(n, o) for o in ours) + f" | {_sps(n, op) if op else 'not installed'} | "
                         + " | ".join(ratios) + " |")
            print(lines[-1], flush=True)
    return lines + [""]

def e2e_table(tasks, repeat:int, epsilon=1.0, delta=1e-5, epochs=3, B=64) -> list:
    lines = [f"## One short private run end to end (ε = {epsilon:g}, δ = {delta:g}, {epochs} epochs, B = {B}, calibration included)", "",
             "dpnotebooks: `minimize(MLP, 'dp-sgd', alpha=0, batch_size, epochs)` (plan, PLD calibration with every cache cleared first, run, float64). Opacus: "
             "`make_private_with_epsilon` (PRV accountant) and the epochs. Seconds, median (q25–q75).", "",
             "| task | dpnotebooks s | Opacus s | ratio (Opacus / dpnotebooks) |", "|---|---|---|---|"]
    for task in tasks:
        fns = dict(ours=ours_end_to_end(task, epsilon, delta, epochs, B))
        if _have("opacus"): fns["opacus"] = opacus_end_to_end(task, epsilon, delta, epochs, B)
        t = interleaved(fns, repeat, warmup=0)
        o, op = t["ours"], t.get("opacus")
        s = lambda x: f"{x['median']:.3g} ({x['q25']:.3g}–{x['q75']:.3g})"
        lines.append(f"| {task.name} | {s(o)} | {s(op) if op else 'not installed'} | {op['median'] / o['median']:.2f}× |" if op else
                     f"| {task.name} | {s(o)} | not installed | n/a |")
        print(lines[-1], flush=True)
    return lines + [""]

GRAD_REPEAT = 2000  # sub-millisecond calls: 200 repeats (30 ms) let one stretch of machine noise move a ratio from 1.3 to 2

def grad_table(tasks, B:int, repeat:int) -> list:
    lines = [f"## Per-sample gradients against one batched forward+backward (B = {B} rows, one point, {max(GRAD_REPEAT, repeat)} interleaved repeats)", "",
             "Unavoidable work: one batched gradient of the same shapes (`full_grad` for the built-in models, autograd of the mean loss "
             "for the adapters). `each` = materialized per-sample gradients (`grad_each`); `fused` = the clipped per-sample sum "
             "(`MLP.clipped_sum`; `FrameworkLoss.clipped_sum` for the adapters: ghost clipping, here of dense layers), what DP-SGD runs, from numpy arrays. from_jax, timed in one interleaving: our clipped sum from numpy against the reference on device arrays (no host copies: a conservative ratio), both from numpy arrays to a numpy result (as DP-SGD calls it), and both on device arrays (the jitted computations alone); the last two are like for like. `spread`: the fused ratio within each tenth of the repeats, min–max. Target: ratio ≤ 1.5.", "",
             "| task | model | dtype | dim | batched ms | grad_each ms | ratio | fused clipped sum ms | ratio | spread |", "|---|---|---|---|---|---|---|---|---|---|"]
    for task in tasks:
        for r in grad_rows(task, min(B, len(task.train)), max(GRAD_REPEAT, repeat)):
            fu = r.get("fused")
            lines.append(f"| {task.name} | {r['model']} | {r['dtype']} | {r['d']} | {r['batched'] * 1e3:.3g} | {r['each'] * 1e3:.3g} | "
                         f"{r['each'] / r['batched']:.2f} | {fu * 1e3:.3g} | {fu / r['batched']:.2f} | "
                         f"{r['fused_blocks'][1]:.2f}–{r['fused_blocks'][2]:.2f} |" if fu else
                         f"| {task.name} | {r['model']} | {r['dtype']} | {r['d']} | {r['batched'] * 1e3:.3g} | {r['each'] * 1e3:.3g} | "
                         f"{r['each'] / r['batched']:.2f} | - | - | - |")
            print(lines[-1], flush=True)
    return lines + [""]

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="breast-cancer only, batch 64 and 256, 3 repeats")
    ap.add_argument("--out", default="peer-opacus.md", help="the markdown report (default ./peer-opacus.md)")
    ap.add_argument("--ours", choices=["fused", "materialized", "jax"], default="fused", help="dpnotebooks' MLP (before/after comparisons)")
    ap.add_argument("--skip", default="", help="comma-separated sections to skip: epoch,e2e,grad,models")
    ap.add_argument("--memory-probe", default=None, help=argparse.SUPPRESS)   # internal: one peak-memory measurement in a fresh process
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="cuda: dpnotebooks on cupy, Opacus on the GPU (epoch and e2e only)")
    a = ap.parse_args(argv)
    if a.memory_probe: _memory_probe(a.memory_probe); return 0
    repeat = 3 if a.quick else a.repeat
    global OURS, DEVICE; OURS, DEVICE = a.ours, a.device
    if DEVICE == "cuda":
        from dpnotebooks.core.backend import available_backends
        if "cupy" not in available_backends(): raise SystemExit("--device cuda needs a CUDA GPU with cupy (and torch with CUDA for Opacus).")
        if OURS == "jax": raise SystemExit("--device cuda runs dpnotebooks' own MLP on cupy: use --ours fused or materialized.")
    if _have("torch"):
        import torch; torch.set_num_threads(a.threads)
    tasks = [utility_task("breast-cancer")] + ([] if a.quick else [utility_task("digits")])
    batches = (64, 256) if a.quick else (64, 256, 1024)
    skip = set(a.skip.split(",")) | ({"grad"} if DEVICE == "cuda" else set())     # the gradient rows are the CPU's (benchmarks/gpu.py has the GPU's)
    m = machine(a.threads)
    lines = ["# DP-SGD against Opacus", "", f"Written by `benchmarks/peer_opacus.py {' '.join(sys.argv[1:])}`.", "",
             "| machine | |", "|---|---|"] + [f"| {k} | {v} |" for k, v in m.items()] + [""]
    print("\n".join(lines), flush=True)
    with threadpool_limits(a.threads):
        if "epoch" not in skip: lines += epoch_table(tasks, batches, repeat)
        if "grad" not in skip: lines += grad_table(tasks, 256, repeat)
        if "e2e" not in skip: lines += e2e_table(tasks, max(1, repeat // 2))
        if "models" not in skip and DEVICE == "cpu": lines += model_table(batches, repeat)
    lines.append(f"Load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}.")
    Path(a.out).write_text("\n".join(lines) + "\n")
    print(f"written: {a.out}")
    return 0

if __name__ == "__main__": sys.exit(main())
