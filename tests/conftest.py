"""Shared pytest configuration: the `slow` marker and the `backend` fixture."""
import pytest
from dpnotebooks.backend import available_backends, use_backend

def pytest_configure(config):
    config.addinivalue_line("markers", "slow: a longer test (audits, end-to-end); CI still runs it")

_AVAILABLE = available_backends()
_BACKEND_PARAMS = [pytest.param(name, id=name,
                                marks=() if name in _AVAILABLE else pytest.mark.skip(reason="no CUDA GPU"))
                   for name in ("numpy", "cupy")]

@pytest.fixture(params=_BACKEND_PARAMS)
def backend(request):
    "Run the test once per array backend (cupy is skipped where no CUDA GPU is usable); yields the backend name."
    with use_backend(request.param):
        yield request.param


def untouchable(problem):
    "`problem` with data that raise on any access: proves a refusal came before any data was read."
    from dpnotebooks.problems import Dataset
    class Untouchable(Dataset):
        def __getitem__(self, idx): raise AssertionError("the data were read")
    problem.data = Untouchable(problem.data.A, problem.data.y)
    return problem
