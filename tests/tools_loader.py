"""The scripts of tools/ (they are not a package), loaded as modules for the tests that check them."""
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

def tool(name:str):
    "tools/<name>.py as a fresh module (each call loads it again: a test may patch its globals)."
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod); return mod
