"""Each test runs in one flavor (unigrad/flavor.py): tinygrad's (the native API) unless the test or its module is
marked `pytest.mark.flavor("torch")`. The knobs a test may leave changed (the flavor, default dtypes, train mode)
are reset around each test, so one test's `import unigrad.torch` or `dtypes.default_float = ...` never leaks."""

import pytest

from unigrad import config as ucfg

_RESET = ("FLAVOR", "DEFAULT_FLOAT", "DEFAULT_INT", "TRAINING")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "flavor(name): run the test under this flavor ('tinygrad' or 'torch')")


@pytest.fixture(autouse=True)
def _flavor(request: pytest.FixtureRequest):
    marker = request.node.get_closest_marker("flavor")
    saved = {k: ucfg.KNOBS[k].value for k in _RESET}
    for k in _RESET:
        ucfg.KNOBS[k].value = ucfg.KNOBS[k].default
    ucfg.FLAVOR.value = marker.args[0] if marker else "tinygrad"
    yield ucfg.FLAVOR.value
    for k, v in saved.items():
        ucfg.KNOBS[k].value = v
