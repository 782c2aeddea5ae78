"""``kernelproxy.install``: ``import cupy`` and friends give the proxy, and uninstall undoes it."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kernelproxy


@pytest.fixture
def installed(session):
    kernelproxy.install(session)
    yield session
    kernelproxy.uninstall()


def test_import_forms(installed):
    import cupy
    import cupy.linalg
    import cupyx
    from cupy import fft
    from cupy.cuda.memory import OutOfMemoryError

    assert cupy.ndarray is kernelproxy.ndarray
    assert cupy.linalg is sys.modules["cupy.linalg"] and cupy.fft is fft
    assert OutOfMemoryError is kernelproxy.OutOfMemoryError and issubclass(OutOfMemoryError, MemoryError)
    assert cupy.exceptions.AxisError is np.exceptions.AxisError
    assert cupy.linalg.LinAlgError is np.linalg.LinAlgError
    assert cupy.float32 is np.float32 and cupy.newaxis is None
    x = cupy.arange(4.0)
    assert isinstance(x, cupy.ndarray)
    np.testing.assert_array_equal(fft.fft(x).get(), np.fft.fft(np.arange(4.0)))
    assert float(cupy.linalg.norm(x)) == pytest.approx(np.linalg.norm(np.arange(4.0)))
    assert cupy.get_array_module(x) is cupy and cupy.get_array_module(np.ones(2)) is np
    assert hasattr(cupyx, "scatter_add")


def test_unknown_names_are_clear(installed):
    import cupy
    with pytest.raises(AttributeError, match="not available on gpu-workbench"):
        cupy.show_config
    with pytest.raises(ModuleNotFoundError, match="cupy.cudnn"):
        import cupy.cudnn  # noqa: F401


def test_uninstall_restores(session):
    kernelproxy.install(session)
    assert kernelproxy.installed()
    kernelproxy.uninstall()
    assert not kernelproxy.installed()
    from kernelproxy.modules import build_modules
    assert sys.modules.get("cupy") is not build_modules()["cupy"]


def test_proxy_wins_over_a_real_cupy_and_gives_it_back(tmp_path, pool):
    """A real (here: stand-in) cupy already imported is set aside while installed."""
    fake = tmp_path / "cupy"
    fake.mkdir()
    (fake / "__init__.py").write_text("REAL = True\n")
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        import cupy
        assert cupy.REAL
        import kernelproxy
        s = kernelproxy.connect({pool.address!r}, {pool.token!r})
        kernelproxy.install(s)
        import cupy as cp
        assert not hasattr(cp, "REAL") and float(cp.arange(3).sum()) == 3.0
        kernelproxy.uninstall()
        import cupy
        assert cupy.REAL
        s.close()
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "ok", out.stderr
