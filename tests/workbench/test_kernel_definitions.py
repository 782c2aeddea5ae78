"""The worker's checks of a user kernel's definition (gpu_backend/devices/cupy_device.py),
run without a GPU: CuPy itself is stood in for by a recorder of what it would be asked
to build (only CuPy is replaced; the checks and the module cache are the pool's own)."""

from __future__ import annotations

import pytest

from gpu_backend.devices.cupy_device import CupyDevice, check_compile_options
from gpu_backend.protocol.errors import NotAllowedError


class _RecordingCupy:
    """What the worker asks CuPy to build, kept instead of compiled."""

    def __init__(self) -> None:
        self.built: list = []
        outer = self

        class RawModule:
            def __init__(self, **kwargs):
                outer.built.append(("RawModule", kwargs))

            def get_function(self, name):
                return ("function", name)

        self.RawModule = RawModule

    def RawKernel(self, **kwargs):
        self.built.append(("RawKernel", kwargs))
        return ("kernel", kwargs["name"])


@pytest.fixture
def device():
    dev = object.__new__(CupyDevice)
    dev._kernels, dev.cupy = {}, _RecordingCupy()
    return dev


def test_a_module_is_built_once_for_its_functions(device):
    definition = {"code": "x", "options": ["-std=c++17"], "name_expressions": ["f<int>"]}
    assert device._build_kernel("module", {**definition, "function": "f<int>"}) == ("function", "f<int>")
    assert device._build_kernel("module", {**definition, "function": "g"}) == ("function", "g")
    assert device.cupy.built == [("RawModule", {"code": "x", "options": ("-std=c++17",),
                                                "name_expressions": ("f<int>",)})]


@pytest.mark.parametrize("kind", ["raw", "module"])
def test_nvcc_and_file_naming_options_are_refused(device, kind):
    base = {"code": "x", "name": "k"} if kind == "raw" else {"code": "x", "function": "k"}
    with pytest.raises(NotImplementedError, match="NVRTC only"):
        device._build_kernel(kind, {**base, "backend": "nvcc"})
    for options in (["-ccbin", "/bin/sh"], ["-I/etc"], ["--pre-include=/etc/passwd"],
                    ["--time=/tmp/x"], ["-o", "/tmp/x"], ["-wrapper"]):
        with pytest.raises(NotAllowedError, match="not allowed"):
            device._build_kernel(kind, {**base, "options": options})
    with pytest.raises(TypeError, match="tuple of strings"):
        device._build_kernel(kind, {**base, "options": "-O3"})
    with pytest.raises(TypeError, match="unexpected kernel arguments"):
        device._build_kernel(kind, {**base, "path": "/etc/passwd"})
    assert device.cupy.built == []


def test_code_generation_options_and_macros_are_allowed():
    check_compile_options(("-std=c++17", "--use_fast_math", "-DN=4", "-DPATH_LIKE=a/b",
                           "-maxrregcount=64", "-lineinfo", "--expt-relaxed-constexpr"))


def test_bad_module_names_are_refused(device):
    for bad in ({"code": "x", "function": 3}, {"code": "x", "function": "f", "name_expressions": [1]}):
        with pytest.raises(TypeError, match="strings"):
            device._build_kernel("module", bad)
