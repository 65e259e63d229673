"""Each test runs in one flavor (unigrad/flavor.py): tinygrad's (the native API) unless the test or its module is
marked `pytest.mark.flavor("torch")`, or the module is one of TORCH_MODULES below (suites of torch's API, checked
against torch: its names, nn layers, optimizers, data loading, autograd functions, printing). The knobs a test may leave changed (the flavor, default dtypes, train mode)
are reset around each test, so one test's `import unigrad.torch` or `dtypes.default_float = ...` never leaks."""

import pytest

from unigrad import config as ucfg

_RESET = ("FLAVOR", "DEFAULT_FLOAT", "DEFAULT_INT", "TRAINING")
TORCH_MODULES = (
    "api/test_api_torch_names.py",
    "api/test_torch_functions.py",
    "api/test_torch_functions_extra.py",
    "api/test_torch_compositions.py",
    "api/test_torch_env.py",
    "api/test_data_alias.py",
    "api/test_data_checks.py",
    "api/test_inplace_methods.py",
    "api/test_printing.py",
    "api/test_linalg.py",
    "api/test_movement.py",
    "api/test_reduce.py",
    "api/test_nn.py",
    "api/test_nn_extra.py",
    "api/test_math.py",
    "api/test_random.py",
    "api/test_inplace.py",
    "api/test_api_extra.py",
    "ops/test_ops.py",
    "test_dtype.py",
    "runtime/test_multi.py",
    "utils/test_data.py",
    "test_autograd.py",
    "nn/test_datasets.py",
    "nn/test_functional.py",
    "nn/test_layers.py",
    "nn/test_layers_extra.py",
    "nn/test_module.py",
    "nn/test_rnn.py",
    "nn/test_state.py",
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "flavor(name): run the test under this flavor ('tinygrad' or 'torch')")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        path = item.path.as_posix()
        if any(path.endswith("test/" + m) for m in TORCH_MODULES) and item.get_closest_marker("flavor") is None:
            item.add_marker(pytest.mark.flavor("torch"))


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
