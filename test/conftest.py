"""Each test runs in one flavor (unigrad/flavor.py): tinygrad's (the native API) unless the test or its module is
marked `pytest.mark.flavor("torch")`, or the module is one of TORCH_MODULES below (suites of torch's API, checked
against torch: its names, nn layers, optimizers, data loading, autograd functions, printing). The knobs a test may leave changed (the flavor, default dtypes, train mode)
are reset around each test, so one test's `import unigrad.torch` or `dtypes.default_float = ...` never leaks."""

import numpy as np
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


def _cl_lacks(dtype_name: str) -> bool:
    """The OpenCL device lacks this dtype (PoCL: no cl_khr_fp16); False where there is no OpenCL at all."""
    from unigrad.runtime.support import opencl as cl

    if cl.unavailable() is not None:
        return False
    from unigrad.dtype import dtypes
    from unigrad.runtime import Device

    return not Device["CL"].info.supports(getattr(dtypes, dtype_name))


def _half_param(value: object) -> bool:
    return str(value) in ("float16", "half", "dtypes.float16", "<class 'numpy.float16'>") or value is np.float16


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip_half: bool | None = None
    for item in items:
        path = item.path.as_posix()
        if any(path.endswith("test/" + m) for m in TORCH_MODULES) and item.get_closest_marker("flavor") is None:
            item.add_marker(pytest.mark.flavor("torch"))
        params = getattr(getattr(item, "callspec", None), "params", {})
        if params.get("device") == "CL" and any(_half_param(v) for v in params.values()):
            skip_half = _cl_lacks("float16") if skip_half is None else skip_half
            if skip_half:
                item.add_marker(pytest.mark.skip(reason="this OpenCL device has no cl_khr_fp16 (PoCL: none)"))


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
