"""The import graph of the package: which module imports which, any cycle, and imports of `_`-prefixed names across modules.

    python3 tools/import_graph.py            # prints edges, cycles and private imports; exit 1 if there is a cycle or a private import
"""
import ast, sys
from pathlib import Path

PKG = "dpnotebooks"

def module_imports(path:Path) -> list:
    "(imported module, [names]) of every import of a package module in `path`, at any depth (function-level imports included)."
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level == 1: target = mod
            elif mod == PKG or mod.startswith(PKG + "."): target = mod[len(PKG) + 1:]
            else: continue
            out.append((target, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            out += [(a.name[len(PKG) + 1:], []) for a in node.names if a.name.startswith(PKG + ".")]
    return out

def graph(root:Path) -> tuple:
    "edges {module: {imported modules}} and private imports [(module, imported module, name)]."
    edges, private = {}, []
    for f in sorted((root / PKG).glob("*.py")):
        if f.stem in ("_modidx",): continue
        me = f.stem
        for target, names in module_imports(f):
            if target in ("", "__init__"):
                names = [n for n in names if n != "__version__"]
                target = "__init__"
                if not names: continue
            edges.setdefault(me, set()).add(target)
            private += [(me, target, n) for n in names if n.startswith("_") and target != me]
    return edges, private

def cycles(edges:dict) -> list:
    "Every strongly connected component with more than one module (Tarjan)."
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    def visit(v):
        index[v] = low[v] = counter[0]; counter[0] += 1; stack.append(v); on.add(v)
        for w in edges.get(v, ()):
            if w not in index: visit(w); low[v] = min(low[v], low[w])
            elif w in on: low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v: break
            if len(comp) > 1: out.append(sorted(comp))
    for v in list(edges): 
        if v not in index: visit(v)
    return out

if __name__ == "__main__":
    root = Path(__file__).resolve().parents[1]
    edges, private = graph(root)
    for m in sorted(edges): print(f"{m} -> {', '.join(sorted(edges[m]))}")
    cyc = cycles(edges)
    print(f"\nmodules: {len(list((root / PKG).glob('*.py'))) - 1}; edges: {sum(map(len, edges.values()))}; cycles: {cyc or 'none'}")
    print(f"imports of _-prefixed names across modules: {len(private)}")
    for p in private: print("  %s imports %s from %s" % (p[0], p[2], p[1]))
    sys.exit(1 if cyc or private else 0)
