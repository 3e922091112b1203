"""Run a notebook's cells as the site build and the test tiers do: in its folder, with nbclient, the cells nbdev-test
leaves out left out (`test_flags`, `run_flags`), `#| eval: false` and `nbdev_export()` cells never run.

A build worker runs its pages in one kernel (`execute(..., reuse=True)`), reset before each page (`_FRESH`) and stopped
with `shutdown_kernel`; `cell_seconds` reads each cell's time from the timestamps nbclient records.
"""
from __future__ import annotations
import sys
from pathlib import Path

_TOOLS = str(Path(__file__).resolve().parent)     # tools/ is not a package: its scripts import each other from there,
if _TOOLS not in sys.path: sys.path.insert(0, _TOOLS)   # run as scripts or loaded by tests/tools_loader.py
from site_render import directives


def _stop_heartbeat(self, wait: float = 10.0):
    """`HBChannel.stop` that stops waiting for the heartbeat thread after `wait` seconds. At shutdown the thread can stay
    blocked on the dead kernel's socket, and the page build then hangs on its join forever (jupyter_client#771 reports such
    hangs in about 0.5% of shutdowns; on 2026-11-25 one held a CI site build on 01_privacy for 13 minutes). The thread is a
    daemon, so leaving it costs nothing; its socket is closed only once the thread has ended."""
    self._running = False
    self._exit.set()
    self.join(timeout=wait)
    if not self.is_alive(): self.close()


# Run before each page in a reused kernel (first line: the page's folder): a fresh namespace in the page's folder, with the
# warnings filters, environment, sys.path, matplotlib settings, dpnotebooks backend and JAX precision the kernel had before its
# first page (a build of every page in fresh kernels and one in reused kernels differed, before the last, in 04e_losses's JAX run).
_FRESH = r"""
import os as _o, sys as _s, copy as _c, warnings as _w
_o.chdir(_FOLDER)
if not hasattr(_s, "_dpnb_fresh"):
    import matplotlib.pyplot as _p, matplotlib as _m     # what a fresh kernel sets up on its first pyplot import, taken once
    with _w.catch_warnings():                           # tqdm.auto warns once a kernel, on import, that ipywidgets is missing:
        _w.simplefilter("ignore"); import tqdm.auto     # on no page, rather than on whichever page of a worker imports it first
    _s._dpnb_fresh = (list(_w.filters), dict(_o.environ), list(_s.path), _c.deepcopy(dict(_m.rcParams)))
else:
    _f = _s._dpnb_fresh
    _w.filters[:] = _f[0]; _w._filters_mutated()         # also forgets which warnings were shown (a fresh kernel shows them again)
    _o.environ.clear(); _o.environ.update(_f[1]); _s.path[:] = _f[2]
    import matplotlib.pyplot as _p, matplotlib as _m
    _p.close("all")                                     # the settings, then the kernel's inline backend, shown as it draws
    _m.rcParams.update({k: v for k, v in _c.deepcopy(_f[3]).items() if k not in ("backend", "interactive")})
    if "inline" not in _m.get_backend():               # a page's matplotlib.use("Agg") (50_cli's dpnb demo) hid later figures
        get_ipython().run_line_magic("matplotlib", "inline")
    if "dpnotebooks.core.backend" in _s.modules:
        _b = _s.modules["dpnotebooks.core.backend"]; _b.set_backend("numpy", "float64"); _b._backend_from_env()
    if "jax" in _s.modules:                             # from_jax turns float64 on for the process; a fresh kernel has JAX's default
        _s.modules["jax"].config.update("jax_enable_x64", _o.environ.get("JAX_ENABLE_X64", "").lower() in ("1", "true", "t", "y", "yes", "on"))
# A new __main__ and namespace, as `%reset` would, but the old one is left as it was: a function an earlier page defined and
# registered in the package (30_minimize's recipes) keeps its globals. One statement: IPython runs each in the current namespace.
(lambda ip: (ip.init_create_namespaces(), ip.init_user_ns()))(get_ipython())
"""

_KERNEL = {}   # this process's reused kernel: {"k": the NotebookClient that started it, with its km and kc}


def shutdown_kernel():
    "Stop this process's reused kernel, if any (at the end of a build, or when its worker process exits)."
    k = _KERNEL.pop("k", None)
    if not k: return
    from jupyter_core.utils import run_sync
    try:
        k.kc.stop_channels()
        run_sync(k.km.shutdown_kernel)(now=True)
    except Exception:
        try: k.km.provisioner.process.kill()
        except Exception: pass


def test_flags(root: Path) -> set:
    "nbdev's `tst_flags` (`root`/pyproject.toml): cells with these directives nbdev-test leaves out unless asked (`slow` among them)."
    import tomllib
    cfg = tomllib.loads((root / "pyproject.toml").read_text()).get("tool", {}).get("nbdev", {})
    return set(str(cfg.get("tst_flags", "")).split())


def run_flags(root: Path, skip_slow: bool = False) -> set:
    """The directives whose cells `execute` leaves out in the project at `root`: its test flags but `slow` (all of them with
    `skip_slow`, as nbdev-test)."""
    return test_flags(root) - ({"slow"} if not skip_slow else set())


def execute(nb, path: Path, flags: set, reuse: bool = False, timeout: int = 900):
    """Run the notebook in its folder with nbclient; eval-false and `nbdev_export()` cells, and those with a directive of
    `flags` (the project's `run_flags`), are skipped, their source kept. `reuse`: run it in this process's
    kernel, started once (about 2 s a page saved: a kernel's start and the package's import), after `_FRESH` has reset the
    namespace and the state pages change; a page that fails stops it. `timeout`: seconds a cell may run."""
    import nbformat
    from nbclient import NotebookClient
    from jupyter_client.channels import HBChannel
    HBChannel.stop = _stop_heartbeat
    saved = {}
    for i, c in enumerate(nb.cells):
        if c.cell_type == "code":
            d = directives(c.source)
            # like nbdev-test: never run a notebook's `nbdev_export()` cell (two notebooks exporting at once race on the package files)
            if flags & d.keys() or d.get("eval") == "false" or "nbdev_export(" in c.source:
                saved[i], c.source = c.source, "pass"
    if reuse: nb.cells.insert(0, nbformat.v4.new_code_cell(f"_FOLDER = {str(path.parent)!r}" + _FRESH))
    k = _KERNEL.get("k") if reuse else None   # a one-off run never picks up the saved kernel
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}},
                            **({"km": k.km} if k else {}))
    if k: client.kc = k.kc
    try: client.execute(**({"cleanup_kc": False} if reuse else {}))
    except BaseException:
        if reuse: _KERNEL["k"] = client; shutdown_kernel()
        raise
    if reuse:
        _KERNEL["k"] = client
        del nb.cells[0]
    for i, src in saved.items():
        nb.cells[i].source, nb.cells[i].outputs = src, []
    return nb


def cell_seconds(nb) -> list:
    "(cell id, seconds) of each executed code cell, from the timestamps nbclient records."
    from datetime import datetime
    out = []
    for c in nb.cells:
        t = c.get("metadata", {}).get("execution", {})
        if c.cell_type == "code" and "iopub.status.busy" in t and "shell.execute_reply" in t:
            dt = datetime.fromisoformat(t["shell.execute_reply"].replace("Z", "+00:00")) - datetime.fromisoformat(t["iopub.status.busy"].replace("Z", "+00:00"))
            out.append((c.get("id", "?"), dt.total_seconds()))
    return out
