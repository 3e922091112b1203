"""JAX ghost clipping against jitted vmap(grad) + clip (issue 44 §1): one clipped gradient sum of a small CNN on 8×8 images
(conv 1→16 3×3 + bias, ReLU, conv 16→32 3×3 stride 2 + bias, ReLU, dense 512→10, softmax cross-entropy), float64 and
float32, B = 64 and 256; and of a bag of 16 token embeddings from a 10,000 × 32 table with a logistic head, B = 128. Both are `jax_clipped_sum_fn(f).packed` and `vmap_clipped_sum_fn(f)`, compiled first, then timed
in turns (interleaved repeats); the table gives medians.

    .venv/bin/python benchmarks/jax_ghost_speed.py [--repeat 7] [--out benchmarks/jax_ghost_speed_results.md]
"""
import argparse, os, platform, time
from pathlib import Path
import numpy as np
import jax, jax.numpy as jnp
from jax.flatten_util import ravel_pytree
jax.config.update("jax_enable_x64", True)
from dpnotebooks.problems.jax_ghost import jax_clipped_sum_fn, vmap_clipped_sum_fn

def cnn():
    "(f(x, a, t), x0): the CNN's per-example loss on flat parameters, and its initial parameters."
    rng = np.random.default_rng(0)
    q0 = {"K1": rng.normal(size=(16, 1, 3, 3)) * .3, "c1": np.zeros(16), "K2": rng.normal(size=(32, 16, 3, 3)) * .1, "c2": np.zeros(32),
          "W": rng.normal(size=(512, 10)) * .05, "b": np.zeros(10)}
    def loss(q, a, t):
        h = jax.nn.relu(jax.lax.conv_general_dilated(a.reshape(1, 1, 8, 8), q["K1"], (1, 1), "SAME") + q["c1"][None, :, None, None])
        h = jax.nn.relu(jax.lax.conv_general_dilated(h, q["K2"], (2, 2), "SAME") + q["c2"][None, :, None, None])
        z = h.reshape(-1) @ q["W"] + q["b"]
        return jax.nn.logsumexp(z) - z[t]
    flat, unravel = ravel_pytree(jax.tree_util.tree_map(jnp.asarray, q0))
    return (lambda x, a, t: loss(unravel(x), a, t)), flat

def embedding():
    "(f(x, a, t), x0): 16 token ids per example looked up in a 10,000 × 32 table, averaged, a logistic head."
    rng = np.random.default_rng(0)
    flat, unravel = ravel_pytree({"E": jnp.asarray(rng.normal(size=(10000, 32)) * .1), "w": jnp.asarray(rng.normal(size=32))})
    def f(x, a, t):
        q = unravel(x); return jnp.logaddexp(0., -t * (jnp.mean(q["E"][a.astype(jnp.int32)], axis=0) @ q["w"]))
    return f, flat

def timed(f, x, A, y, repeat:int) -> dict:
    "Median ms of the ghost and the vmap(grad) clipped sums, compiled first, timed in turns."
    fns = {"ghost": jax_clipped_sum_fn(f).packed, "vmap": vmap_clipped_sum_fn(f)}
    for fn in fns.values(): fn(x, A, y, 1.0).block_until_ready()
    ts = {k: [] for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            t = time.perf_counter(); fn(x, A, y, 1.0).block_until_ready(); ts[k].append(time.perf_counter() - t)
    return {k: 1e3 * float(np.median(v)) for k, v in ts.items()}

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7); ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    f, flat = cnn(); rng = np.random.default_rng(1)
    rows = ["| model | dtype | B | ghost ms | vmap(grad) ms | ratio |", "|---|---|---|---|---|---|"]
    fe, xe = embedding()
    for dt in (jnp.float64, jnp.float32):
        for B in (64, 256):
            A, y, x = jnp.asarray(rng.normal(size=(B, 64)), dt), jnp.asarray(rng.integers(0, 10, B)), jnp.asarray(flat, dt)
            m = timed(f, x, A, y, a.repeat)
            rows.append(f"| cnn | {np.dtype(dt).name} | {B} | {m['ghost']:.1f} | {m['vmap']:.1f} | {m['vmap'] / m['ghost']:.2f}× |")
        A, y = jnp.asarray(rng.integers(0, 10000, size=(128, 16)), dt), jnp.asarray(rng.choice([-1.0, 1.0], 128), dt)
        m = timed(fe, jnp.asarray(xe, dt), A, y, a.repeat)
        rows.append(f"| embedding | {np.dtype(dt).name} | 128 | {m['ghost']:.1f} | {m['vmap']:.1f} | {m['vmap'] / m['ghost']:.2f}× |")
    plan = jax_clipped_sum_fn(f).plan_for(jnp.asarray(flat), jnp.zeros((8, 64)), jnp.zeros(8, int)).describe()
    text = (f"JAX {jax.__version__}, {os.cpu_count()} CPUs ({platform.machine()}), {a.repeat} interleaved repeats. CNN plan: `{plan}`.\n\n"
            + "\n".join(rows) + "\n")
    print(text)
    if a.out: Path(a.out).write_text("# JAX ghost clipping against vmap(grad): a small CNN, an embedding table\n\nCommand: `python benchmarks/jax_ghost_speed.py`\n\n" + text)

if __name__ == "__main__": main()
