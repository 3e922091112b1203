"""Shared pytest configuration: the `slow` marker and the `backend` fixture."""
import sys
import pytest
from dpnotebooks.core.backend import available_backends, use_backend

# Every worker collects every test module, and some import nbformat, which imports jsonschema and its optional IRI-format
# checker, rfc3987-syntax: 2.7 s to build its grammar, for a format no notebook schema uses (tools/site_render.py says more).
sys.modules.setdefault("rfc3987_syntax", None)

def pytest_configure(config):
    config.addinivalue_line("markers", "slow: a longer test (audits, end-to-end); CI still runs it")

_AVAILABLE = available_backends()
_WHY = {"cupy": "no usable CUDA GPU (cupy)", "torch": "torch is not installed (the [torch] extra)",
        "array-api-strict": "array-api-strict is not installed (the [dev] extra)"}
_BACKEND_PARAMS = [pytest.param(name, id=name,
                                marks=() if name in _AVAILABLE else pytest.mark.skip(reason=_WHY[name]))
                   for name in ("numpy", "array-api-strict", "torch", "cupy")]

@pytest.fixture(params=_BACKEND_PARAMS)
def backend(request):
    "Run the test once per array backend (one not usable here is skipped, with the reason); yields the backend name."
    with use_backend(request.param):
        yield request.param


def untouchable(problem):
    "`problem` with data that raise on any access: proves a refusal came before any data was read."
    from dpnotebooks.problems.dataset import Dataset
    class Untouchable(Dataset):
        def __getitem__(self, idx): raise AssertionError("the data were read")
    problem.data = Untouchable(problem.data.A, problem.data.y)
    return problem
