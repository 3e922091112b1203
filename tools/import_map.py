"""Measure the package's structure: its import map drawn on floors, the imports that run up a layer, the circles, how many
package files name each algorithm, the largest modules, the functions with many parameters, and the modules one
`dpnb run dp-sgd --data x.csv` request visits.

    .venv/bin/python tools/import_map.py              # the table
    .venv/bin/python tools/import_map.py --json       # the same numbers as JSON
    .venv/bin/python tools/import_map.py --no-trace   # without the traced request
Exits 1 when the imports make a circle or a module imports a `_`-prefixed name from another.

Read from the source (Python's `ast`), so nothing is imported but for the traced request. An arrow is an import of one
package module by another, at module level or inside a function (both are dependencies). A module's floor is one above
the highest floor it imports (a circle's modules share a floor); the floors are the longest chain of imports. A module's
layer is its subpackage (`dpnotebooks/<layer>/...`); a module at the top level of the package gets the layer `FLAT`
assigns it, the layers of DESIGN's table (core, privacy, problems, engine, algorithms, planning, audits and experiments,
interface), so that the flat package of 0.1.0 can be measured against the layered one.
"""
from __future__ import annotations
import argparse, ast, functools, json, sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "dpnotebooks"
LAYERS = ("core", "privacy", "problems", "engine", "algorithms", "planning", ("audits", "experiments"), "interface")
RANK = {name: i for i, layer in enumerate(LAYERS) for name in ((layer,) if isinstance(layer, str) else layer)}

# The layer of each top-level module of the flat package (0.1.0), by what it holds.
FLAT = dict(
    core="backend validation streams smoothing",
    privacy="privacy ledger clipping tree",
    problems="problems losses data lower_bounds stationarity jax_ghost reference lasry_lions",
    engine="registry runloop checkpoint faults",
    algorithms="o2nc zo_oracles ztc_oracle fo_oracle dpsgd spiderboost sosp sosp_erm ganesh_sosp convex_glm",
    planning="minimize cost tuning rates smooth_algorithms sosp_algorithm",
    audits="audit audit_algorithms audit_smooth audit_sosp audit_sosp_erm audit_ganesh_sosp canary_audit one_run_audit",
    experiments="experiments stationarity_rates sosp_escape utility generalization bench",
    interface="cli __init__",
)
FLAT_LAYER = {m: layer for layer, mods in FLAT.items() for m in mods.split()}


@functools.lru_cache(maxsize=None)
def _modules(pkg: Path) -> tuple:
    return tuple(_walk(pkg))


def modules() -> dict:
    "{dotted name below dpnotebooks ('__init__' for the package itself): path} of every package module but the generated index."
    return dict(_modules(PKG))


def _walk(pkg: Path):
    "(name, path) of every module below `pkg` but the generated index."
    for p in sorted(pkg.rglob("*.py")):
        if p.name == "_modidx.py" or "__pycache__" in p.parts: continue
        rel = p.relative_to(pkg).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        yield ".".join(parts) or "__init__", p


def layer_of(name: str) -> str:
    "A module's layer: its subpackage, or FLAT's entry for a top-level module ('interface' for the package itself)."
    if "." in name: return name.split(".")[0]
    if name in RANK: return name                                   # a subpackage's own __init__
    return FLAT_LAYER.get(name, "unassigned")


def _resolve(name: str, path: Path, node) -> list:
    "The package modules an import statement in module `name` refers to."
    mods = modules()
    pkg = [] if name == "__init__" else name.split(".")[:-1] if path.name != "__init__.py" else name.split(".")
    if isinstance(node, ast.Import):
        return [_known(a.name.removeprefix("dpnotebooks").lstrip("."), mods) for a in node.names
                if a.name == "dpnotebooks" or a.name.startswith("dpnotebooks.")]
    if node.level == 0:
        if not (node.module == "dpnotebooks" or (node.module or "").startswith("dpnotebooks.")): return []
        base = node.module.removeprefix("dpnotebooks").lstrip(".").split(".") if node.module != "dpnotebooks" else []
    else:
        base = (pkg[: len(pkg) - (node.level - 1)] if node.level > 1 else pkg) + (node.module.split(".") if node.module else [])
    out = []
    for a in node.names:                                           # `from . import x`: x may be a module
        sub = ".".join(base + [a.name])
        out.append(sub if sub in mods else _known(".".join(base), mods))
    return out


def _known(name: str, mods: dict) -> str:
    "The nearest enclosing module that exists (an import of a name inside a module is an import of that module)."
    parts = name.split(".") if name else []
    while parts and ".".join(parts) not in mods: parts.pop()
    return ".".join(parts) or "__init__"


def imports() -> list:
    "(importer, imported, [names]) of every import of a package module, at module level or inside a function."
    out = []
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.ImportFrom) else []
                out += [(name, m, names) for m in _resolve(name, path, node) if m != name]
    return out


def arrows() -> set:
    """{(importer, imported)} between package modules. An import of the package's `__version__` alone is not an arrow:
    it reads the package's metadata, not its code (a checkpoint records the version that wrote it)."""
    return {(a, b) for a, b, names in imports() if not (b == "__init__" and names == ["__version__"])}


def private_imports() -> list:
    "(importer, imported, name) of every `_`-prefixed name one package module imports from another."
    return sorted((a, b, n) for a, b, names in imports() for n in names if n.startswith("_") and n != "__version__")


def circles(edges: set) -> list:
    "The strongly connected components with more than one module (Tarjan), each sorted."
    graph, index, low, stack, on, out, i = defaultdict(set), {}, {}, [], set(), [], [0]
    for a, b in edges: graph[a].add(b)
    def visit(v):
        index[v] = low[v] = i[0]; i[0] += 1; stack.append(v); on.add(v)
        for w in graph[v]:
            if w not in index: visit(w); low[v] = min(low[v], low[w])
            elif w in on: low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop(); on.discard(w); comp.add(w)
                if w == v: break
            if len(comp) > 1: out.append(sorted(comp))
    sys.setrecursionlimit(10000)
    for v in sorted({x for e in edges for x in e}):
        if v not in index: visit(v)
    return out


def floors(edges: set, names=None) -> dict:
    """{module: floor} for the package's modules (or `names`): 1 for a module importing none of them, else one above the
    highest it imports (a circle's modules share a floor)."""
    comp = {m: tuple(c) for c in circles(edges) for m in c}
    key = lambda m: comp.get(m, (m,))
    deps = defaultdict(set)
    for a, b in edges:
        if key(a) != key(b): deps[key(a)].add(key(b))
    memo = {}
    def floor(k):
        if k not in memo: memo[k] = 0; memo[k] = 1 + max((floor(d) for d in deps[k]), default=0)
        return memo[k]
    return {m: floor(key(m)) for m in (modules() if names is None else names)}


def upward(edges: set) -> list:
    "The arrows from a module to one in a higher layer (audits and experiments share a rank)."
    r = lambda m: RANK.get(layer_of(m), len(LAYERS))
    return sorted((a, b) for a, b in edges if r(b) > r(a))


def algorithm_names() -> list:
    "The algorithms `dpnotebooks.list_algorithms()` lists (imports the package)."
    sys.path.insert(0, str(ROOT))
    import dpnotebooks
    return sorted(a if isinstance(a, str) else a[0] for a in dpnotebooks.list_algorithms())


def naming_files(names: list) -> dict:
    "{algorithm: number of package modules with a string literal equal to its name}."
    hits = Counter()
    for path in modules().values():
        consts = {n.value for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
        for name in names:
            if name in consts: hits[name] += 1
    return {name: hits[name] for name in names}


def many_parameters(at_least: int = 12) -> list:
    "(module, function, parameters) of the package's functions with at least `at_least` named parameters."
    out = []
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = node.args; k = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs)
                if k >= at_least: out.append((name, node.name, k))
    return sorted(out, key=lambda x: -x[2])


def module_lines() -> list:
    "(module, lines), largest first."
    return sorted(((n, len(p.read_text().splitlines())) for n, p in modules().items()), key=lambda x: -x[1])


def trace_request(argv=None) -> dict:
    """Run `dpnb run dp-sgd --data x.csv` (a 300-row CSV of two features and a 0/1 label, written to a temporary folder)
    through `dpnotebooks.interface.cli.main` under `sys.setprofile`, following which package module is running: the modules it
    visits, the moves between modules, and how often each is entered. What runs inside `run_loop` (the steps, the
    checkpoint ticks) is left out: it is the algorithm's work, the same in any request; what is counted is the request's
    way there and back. So is the cost model's timing loop (`_timeit`), whose length depends on the machine's speed."""
    import contextlib, io, os, tempfile
    import numpy as np
    sys.path.insert(0, str(ROOT))
    import importlib
    try: main = importlib.import_module("dpnotebooks.interface.cli").main
    except ModuleNotFoundError: main = importlib.import_module("dpnotebooks.cli").main   # the flat package (0.1.0)
    tmp = Path(tempfile.mkdtemp())
    rs = np.random.default_rng(0); X = rs.normal(size=(300, 2)); y = (X @ [1.0, -1.0] > 0).astype(int)
    np.savetxt(tmp / "x.csv", np.c_[X, y], delimiter=",", header="a,b,y", comments="")
    argv = argv or ["run", "dp-sgd", "--problem", "logistic", "--data", str(tmp / "x.csv"), "--epsilon", "1", "--delta", "1e-5",
                    "--seed", "0", "--quiet", "--out", str(tmp / "r.json")]
    where, path, inside = {}, [], [0]
    pkg = str(PKG) + os.sep
    def name_of(code):
        f = code.co_filename
        if not f.startswith(pkg): return None
        if f not in where: where[f] = ".".join(Path(f).relative_to(PKG).with_suffix("").parts).removesuffix(".__init__") or "__init__"
        return where[f]
    def prof(frame, event, arg):
        if frame.f_code.co_name in ("run_loop", "_timeit") and name_of(frame.f_code):   # the run; the cost model's timing loop
            if event == "call": inside[0] += 1
            elif event == "return": inside[0] -= 1
        if inside[0] or event not in ("call", "return"): return
        m = name_of(frame.f_code) if event == "call" else name_of(frame.f_back.f_code) if frame.f_back else None
        if m is not None and (not path or path[-1] != m): path.append(m)
    cwd = os.getcwd(); os.chdir(tmp)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            sys.setprofile(prof)
            try: code = main(argv)
            finally: sys.setprofile(None)
    finally: os.chdir(cwd)
    entries = Counter(path)
    return dict(exit=code, modules=len(entries), moves=len(path) - 1, distinct_moves=len(set(zip(path, path[1:]))),
                entries=dict(entries.most_common()))


def measure(trace: bool = True) -> dict:
    "Every number of the report, as plain data."
    e, mods = arrows(), modules()
    fl = floors(e)
    names = algorithm_names()
    out = dict(modules=len(mods), arrows=len(e), floors=max(fl.values()), arrows_up=[list(a) for a in upward(e)],
               circles=circles(e), private_imports=private_imports(), layers={m: layer_of(m) for m in mods},
               algorithm_files=naming_files(names), largest_modules=module_lines()[:10],
               many_parameters=many_parameters())
    if trace: out["request"] = trace_request()
    return out


def report(m: dict) -> str:
    "The measurements as text."
    lines = [f"{m['modules']} modules, {m['arrows']} import arrows on {m['floors']} floors",
             f"arrows up a layer: {len(m['arrows_up'])}"] + [f"  {a} ({m['layers'][a]}) -> {b} ({m['layers'][b]})" for a, b in m["arrows_up"]]
    lines += [f"circles: {len(m['circles'])}"] + [f"  {' <-> '.join(c)}" for c in m["circles"]]
    lines += [f"imports of _-prefixed names across modules: {len(m['private_imports'])}"] + [f"  {a} imports {n} from {b}" for a, b, n in m["private_imports"]]
    un = sorted(k for k, v in m["layers"].items() if v == "unassigned")
    if un: lines.append(f"modules with no layer: {', '.join(un)}")
    af = m["algorithm_files"]
    lines.append(f"package files naming each algorithm (most {max(af.values())}):")
    lines += [f"  {k:22} {v}" for k, v in sorted(af.items(), key=lambda x: -x[1])]
    lines.append("largest modules (lines): " + ", ".join(f"{n} {k}" for n, k in m["largest_modules"][:6]))
    mp = m["many_parameters"]
    lines.append(f"functions with >= 12 parameters: {len(mp)}" + ("; most: " + ", ".join(f"{a}.{b} {k}" for a, b, k in mp[:5]) if mp else ""))
    if "request" in m:
        r = m["request"]
        lines.append(f"`dpnb run dp-sgd --data x.csv` (exit {r['exit']}): {r['modules']} modules visited, {r['moves']} moves "
                     f"({r['distinct_moves']} distinct from-to pairs); "
                     "entered most: " + ", ".join(f"{k} {v}" for k, v in list(r["entries"].items())[:6])
                     + "; the entry points: " + ", ".join(f"{k} {v}" for k, v in r["entries"].items() if k.split(".")[-1] in ("cli", "minimize")))
    return "\n".join(lines)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print the numbers as JSON")
    ap.add_argument("--no-trace", action="store_true", help="leave out the traced request")
    a = ap.parse_args()
    m = measure(trace=not a.no_trace)
    print(json.dumps(m, indent=1) if a.json else report(m))
    sys.exit(1 if m["circles"] or m["private_imports"] else 0)
