"""Two ways a test runs the `dpnb` command line, both returning a `subprocess.CompletedProcess` (returncode, stdout, stderr).

- `dpnb_process(...)`: the installed console script in a new process, as a user runs it. For what only a process shows: the
  entry point itself, its start-up (the backend chosen before anything runs), signals and exit on Ctrl-C, a fresh import.
- `dpnb_here(...)`: `dpnotebooks.interface.cli.main(argv)` in this process, its output captured. The same parser, code and exit status
  without starting an interpreter and importing the package again (about 2.5 s a call on two cores, most of a short
  command's time). The backend, the working directory and the warning filters are restored afterwards, and warnings are
  shown every time (a second call in one process sees the warnings the first one saw)."""
import contextlib, io, os, subprocess, sys, warnings
from pathlib import Path

_SCRIPT = Path(sys.executable).parent / "dpnb"   # the console script the installer put beside this interpreter
DPNB = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-c", "import sys; from dpnotebooks.interface.cli import main; sys.exit(main())"]

def dpnb_process(*args, cwd=None, env=None, timeout=300) -> subprocess.CompletedProcess:
    "Run `dpnb ARGS...` in a new process."
    return subprocess.run(DPNB + [str(a) for a in args], capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout)

def _exit_status(e: SystemExit, err) -> int:
    "The status a process would exit with (a message passed to `sys.exit` is printed to stderr and exits 1)."
    if e.code is None or isinstance(e.code, int): return e.code or 0
    print(e.code, file=err); return 1

def dpnb_here(*args, cwd=None) -> subprocess.CompletedProcess:
    "Run `dpnb ARGS...` through `dpnotebooks.interface.cli.main` in this process; an uncaught exception fails the test."
    from dpnotebooks.interface.cli import main
    from dpnotebooks.core.backend import get_backend, use_backend
    out, err, here = io.StringIO(), io.StringIO(), os.getcwd()
    with use_backend(get_backend()), warnings.catch_warnings(), \
         contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        warnings.simplefilter("default")
        try:
            if cwd is not None: os.chdir(cwd)
            try: rc = main([str(a) for a in args])
            except SystemExit as e: rc = _exit_status(e, err)
        finally: os.chdir(here)
    return subprocess.CompletedProcess(["dpnb", *map(str, args)], rc, out.getvalue(), err.getvalue())
