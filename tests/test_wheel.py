"""Installed as users install it: `pip wheel`, the wheel in a fresh virtual environment, `dpnb` run from an empty directory.

The wheel is built from a copy of the package's sources (nothing is written into the repository) and installed with
`--no-deps` into a new venv. Its dependencies come from this test environment through a `.pth` line pointing at an
*overlay* of this environment's site-packages: links to every entry except the extras' packages (scikit-learn, Dask,
JAX, PyTorch) and this environment's own dpnotebooks (its editable-install finder and metadata). The overlay's own
`.pth` files are not processed, so the editable install cannot shadow the wheel, and the extras are genuinely missing:
the core commands must work without them, and a bundled dataset must be refused with the extra to install. A second
`.pth` line then adds the full site-packages, as `pip install "dpnotebooks[datasets]"` would, and the dataset runs.
Nothing is downloaded but the wheel's build backend (setuptools, as `pip wheel` always does).
"""
import json, os, shutil, subprocess, sys, sysconfig, time, zipfile
from email.parser import Parser
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]
EXTRAS_PACKAGES = ("sklearn", "scikit_learn", "dask", "distributed", "jax", "torch")   # prefixes of site-packages entries
EXTRAS = {"datasets", "experiments", "jax", "torch", "gpu", "bench", "lab", "dev"}
RUN = ["--epsilon", "1", "--delta", "1e-5", "--seed", "0", "--quiet"]

def _build_wheel(tmp:Path) -> Path:
    "The wheel of a copy of the package's sources (pyproject, README, LICENSE, dpnotebooks/): `pip wheel --no-deps`."
    src = tmp / "src"; src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE", "setup.py", "setup.cfg", "MANIFEST.in"):
        if (ROOT / name).exists(): shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "dpnotebooks", src / "dpnotebooks", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    res = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp / "dist"), str(src)],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    wheels = list((tmp / "dist").glob("dpnotebooks-*.whl")); assert len(wheels) == 1, wheels
    return wheels[0]

def _site_packages() -> list:
    "This environment's site-packages directories (dependencies of the wheel come from here)."
    return [Path(p) for p in dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib")) if Path(p).is_dir()]

def _overlay(tmp:Path) -> Path:
    "A directory of links to this environment's site-packages entries, less the extras' packages and its own dpnotebooks."
    ov = tmp / "overlay"; ov.mkdir()
    for sp in _site_packages():
        for e in sp.iterdir():
            low = e.name.lower()
            if low.endswith(".pth") or low.startswith(("dpnotebooks", "__editable__", "_dpnotebooks")) or low.startswith(EXTRAS_PACKAGES): continue
            if not (ov / e.name).exists(): (ov / e.name).symlink_to(e)
    return ov

def _venv(tmp:Path, wheel:Path, overlay:Path) -> Path:
    "A fresh venv (from the base interpreter) holding the wheel, its dependencies reachable through the overlay."
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300)
    py = venv / "bin" / "python"
    res = subprocess.run([str(py), "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "zz_dependencies.pth").write_text(f"{overlay}\n")     # after the venv's own site-packages: the wheel comes first
    return venv

def _env(tmp:Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP", "DPNB_BACKEND")}
    return dict(env, PYTHONNOUSERSITE="1", MPLBACKEND="Agg", MPLCONFIGDIR=str(tmp / "mpl"))

def _metadata(wheel:Path):
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        return Parser().parsestr(z.read(name).decode())

@pytest.mark.slow
def test_wheel_installs_and_runs_from_an_empty_directory(tmp_path):
    t0 = time.perf_counter()
    wheel = _build_wheel(tmp_path)
    meta = _metadata(wheel)
    assert set(meta.get_all("Provides-Extra")) >= EXTRAS, meta.get_all("Provides-Extra")
    reqs = meta.get_all("Requires-Dist")
    core = [r.lower() for r in reqs if "extra ==" not in r]
    assert not [r for r in core if r.startswith(("scikit-learn", "dask", "distributed", "jax", "torch", "opacus"))], core
    extra = lambda name: {r.split(";")[0].split(">")[0].split("[")[0].strip().lower() for r in reqs if f'extra == "{name}"' in r}
    assert "scikit-learn" in extra("datasets") and {"dask", "scikit-learn", "jax"} <= extra("experiments")
    assert extra("datasets") | extra("experiments") <= extra("dev"), "the tests need every package of the datasets and experiments extras"
    assert {"pytest", "pytest-xdist", "hypothesis", "nbdev", "array-api-strict", "selenium"} <= extra("dev")
    assert {"torch", "opacus"} <= extra("bench") and extra("torch") == {"torch"} and extra("jax") == {"jax"} and "jupyterlab" in extra("lab")
    assert any(r.startswith("cupy") for r in extra("gpu"))
    with zipfile.ZipFile(wheel) as z:
        assert {n.split("/")[0] for n in z.namelist()} == {"dpnotebooks", wheel.name.split("-py")[0] + ".dist-info"}, z.namelist()

    venv = _venv(tmp_path, wheel, _overlay(tmp_path))
    work = tmp_path / "empty"; work.mkdir()
    env, bindir = _env(tmp_path), venv / "bin"
    run = lambda *a: subprocess.run([str(a[0])] + list(a[1:]), capture_output=True, text=True, cwd=work, env=env, timeout=300)
    t_setup = time.perf_counter() - t0

    probe = run(bindir / "python", "-c", "import sys, dpnotebooks, dpnotebooks.interface.cli, dpnotebooks.planning.minimize, dpnotebooks.experiments.utility, dpnotebooks.experiments.sample_complexity\n"
                "print(dpnotebooks.__file__)\nfor m in ('sklearn', 'distributed', 'jax'):\n"
                "    try: __import__(m); print('present', m)\n    except ImportError: pass")
    assert probe.returncode == 0, probe.stderr
    where = Path(probe.stdout.splitlines()[0]).resolve()
    assert where.is_relative_to(venv.resolve()) and not where.is_relative_to(ROOT), where    # the wheel's copy, not the repository's
    assert "present" not in probe.stdout, probe.stdout                                        # the extras really are missing here

    res = run(bindir / "dpnb", "list"); assert res.returncode == 0 and "klt-single-pass" in res.stdout, res.stderr
    t = time.perf_counter(); res = run(bindir / "dpnb", "demo", "--n", "4000", "--quiet"); t_demo = time.perf_counter() - t
    assert res.returncode == 0, res.stderr
    demo = json.loads((work / "dpnb-demo" / "demo.json").read_text())
    assert demo["private"]["epsilon_spent"] <= 1.0 and (work / "dpnb-demo" / "demo.png").stat().st_size > 1000
    res = run(bindir / "dpnb", "run", "dp-sgd", "--problem", "robust-regression", "--n", "2000", "--d", "4", *RUN, "--out", "r.json")
    assert res.returncode == 0, res.stderr
    r = json.loads((work / "r.json").read_text()); assert r["privacy"]["epsilon_spent"] <= 1.0 and r["algorithm"] == "dp-sgd", r

    # A bundled dataset without the extra: one line naming it, exit 2, nothing written.
    res = run(bindir / "dpnb", "run", "abggmu-spider", "--problem", "logistic", "--data", "breast-cancer", *RUN, "--out", "bc.json")
    assert res.returncode == 2 and res.stderr == 'dpnb: error: the \'breast-cancer\' dataset needs scikit-learn: pip install -e ".[datasets]" in a clone, pip install "dpnotebooks[datasets]" from a wheel\n', res.stderr
    assert not (work / "bc.json").exists()
    res = run(bindir / "dpnb", "experiment", "sosp-escape", "--quick", "--quiet", "--jobs", "2")
    assert res.returncode == 2 and 'pip install "dpnotebooks[experiments]"' in res.stderr, res.stderr

    # With the extras' packages (as `pip install "dpnotebooks[datasets]"` would add them), the dataset runs.
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "zz_dependencies.pth").write_text("\n".join(map(str, [tmp_path / "overlay", *_site_packages()])) + "\n")
    res = run(bindir / "dpnb", "run", "abggmu-spider", "--problem", "logistic", "--data", "breast-cancer", *RUN, "--out", "bc.json")
    assert res.returncode == 0, res.stderr
    assert json.loads((work / "bc.json").read_text())["privacy"]["epsilon_spent"] <= 1.0
    assert sorted(p.name for p in work.iterdir()) == ["bc.json", "dpnb-demo", "r.json"]     # every output in the working directory
    print(f"wheel + venv {t_setup:.1f} s, demo {t_demo:.1f} s, total {time.perf_counter() - t0:.1f} s")
