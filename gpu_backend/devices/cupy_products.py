"""A matrix product made inside the worker's own CUDA-graph capture (stretch replay) by the
cuBLAS call CuPy's ``dot`` makes eagerly, so that the graph's replay gives its bits
(devices/product_capture.py says which products, and why). CuPy handed in.

CuPy refuses cuBLAS under capture in its wrappers' ``setStream`` (``cupy_backends/cuda/libs/
cublas.pyx``), which every wrapper calls first; cuBLAS itself supports capture (its guide,
"CUDA Graphs Support"). So this module calls ``cublasSetStream_v2`` and ``cublasGemmEx`` of
the library CuPy loaded, on CuPy's own handle, with the arguments CuPy 14's
``cupy/_core/_routines_linalg.pyx`` gives them for two matrices (or a matrix and a vector)
of one float or complex dtype: ``dot`` reshapes a vector into a row or a column and rolls
the first operand's axis (``a.T``); ``tensordot_core`` lays each out for cuBLAS
(``_mat_to_cublas_contiguous``: an F-ordered operand as it is, a C-ordered one transposed,
any other copied); ``tensordot_core_v11`` calls ``cublasGemmEx`` with the compute type its
``get_compute_type`` says (``CUPY_TF32``) and the tensor-op default algorithm from compute
capability 8.0. What CuPy does otherwise (a product of two vectors: an element-wise multiply
and a sum; an empty one: a fill) is left to CuPy, which captures it. Two batches of matrices
of one batch shape take ``matmul``'s path for them instead: each made C-contiguous, then
``cublasGemmStridedBatchedEx`` with the operands swapped, the dtype's own type as the
compute type and the default algorithm, as CuPy calls it.

Bitwise equality with CuPy's eager product is checked on a GPU
(tests/gpu_backend/test_captured_products.py, benchmarks/gemm_capture_probe.py).
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

import numpy as np

__all__ = ["CapturedProducts", "cublas_library_path"]


def cublas_library_path() -> str | None:
    """The path of the cuBLAS library this process has loaded (CuPy's), from its maps."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.rstrip("\n").partition("/")[2]
                if path and os.path.basename(path).startswith("libcublas.so"):
                    return "/" + path
    except OSError:
        pass
    return None


class CapturedProducts:
    """``gemm(a, b)``: the product of two CuPy arrays made by cuBLAS on the current stream
    (captured when it captures), or None where CuPy's own path is not cuBLAS's GEMM."""

    def __init__(self, cupy: Any) -> None:
        self.cp = cupy
        from cupy._core import _routines_linalg as linalg   # (CuPy handed in: its own parts)
        from cupy_backends.cuda.libs import cublas
        self._linalg, self._cublas = linalg, cublas
        runtime = cupy.cuda.runtime
        self._cuda_types = {np.dtype("f4"): runtime.CUDA_R_32F, np.dtype("f8"): runtime.CUDA_R_64F,
                            np.dtype("c8"): runtime.CUDA_C_32F, np.dtype("c16"): runtime.CUDA_C_64F}
        self._scalars: dict = {}
        self._lib = None
        self._capability = int(cupy.cuda.Device().compute_capability)

    def _library(self) -> Any:
        if self._lib is None:
            path = cublas_library_path()
            if path is None:   # (not loaded yet: CuPy's first product loads it)
                self.cp.cuda.device.get_cublas_handle()
                path = cublas_library_path()
            if path is None:
                raise RuntimeError("cuBLAS is not loaded in this process")
            lib = ctypes.CDLL(path)
            lib.cublasSetStream_v2.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
            lib.cublasSetStream_v2.restype = ctypes.c_int
            v, i = ctypes.c_void_p, ctypes.c_int
            lib.cublasGemmEx.argtypes = [v, i, i, i, i, i, v, v, i, i, v, i, i, v, v, i, i, i, i]
            lib.cublasGemmEx.restype = ctypes.c_int
            q = ctypes.c_longlong
            lib.cublasGemmStridedBatchedEx.argtypes = [v, i, i, i, i, i, v, v, i, i, q, v, i, i, q,
                                                       v, v, i, i, q, i, i, i]
            lib.cublasGemmStridedBatchedEx.restype = ctypes.c_int
            self._lib = lib
        return self._lib

    def _compute(self, dtype: np.dtype) -> int:
        """cuBLAS's compute type for ``dot``'s product of *dtype*, as CuPy picks it."""
        linalg, cublas = self._linalg, self._cublas
        chosen = linalg.get_compute_type(dtype)
        if dtype.char in "fF":
            if chosen == linalg.COMPUTE_TYPE_PEDANTIC:
                return cublas.CUBLAS_COMPUTE_32F_PEDANTIC
            if chosen == linalg.COMPUTE_TYPE_TF32:
                return cublas.CUBLAS_COMPUTE_32F_FAST_TF32
            return cublas.CUBLAS_COMPUTE_32F
        return (cublas.CUBLAS_COMPUTE_64F_PEDANTIC if chosen == linalg.COMPUTE_TYPE_PEDANTIC
                else cublas.CUBLAS_COMPUTE_64F)

    def _one_and_zero(self, dtype: np.dtype) -> tuple[Any, Any]:
        """Host 1 and 0 of *dtype*, the coefficients CuPy passes for it (kept: cuBLAS reads
        host scalars at the call)."""
        if dtype not in self._scalars:
            self._scalars[dtype] = (np.array(1, dtype), np.array(0, dtype))
        return self._scalars[dtype]

    def _on_stream(self, function: str, *args: Any) -> None:
        """cuBLAS's *function* on CuPy's handle, the handle's stream the current one first
        (as each of CuPy's wrappers sets it)."""
        cp, lib = self.cp, self._library()
        handle = cp.cuda.device.get_cublas_handle()
        status = lib.cublasSetStream_v2(handle, cp.cuda.get_current_stream().ptr)
        if status == 0:
            status = getattr(lib, function)(handle, *args)
        if status != 0:
            raise self._cublas.CUBLASError(status)

    @staticmethod
    def _laid_out(a: Any, trans: int) -> tuple[Any, int, int]:
        """``_mat_to_cublas_contiguous``: the operand cuBLAS reads, its transpose flag and
        leading dimension."""
        itemsize = a.itemsize
        flags = a.flags
        if flags.f_contiguous:
            return a, trans, max(a.strides[1] // itemsize, a.shape[0])
        if not flags.c_contiguous:
            a = a.copy()
        return a, 1 - trans, a.strides[0] // itemsize

    def gemm(self, a: Any, b: Any) -> Any:
        """``a @ b`` (``dot``'s path for matrices and vectors) through cuBLAS's GEMM on the
        current stream; None where CuPy would not call it (the caller runs CuPy's own)."""
        cp = self.cp
        if self._capability < 50 or a.dtype != b.dtype or a.dtype not in self._cuda_types:
            return None
        if a.ndim >= 3:
            return self._batched(a, b)
        a_vec, b_vec = a.ndim == 1, b.ndim == 1
        if a_vec:
            a = a.reshape(1, a.size)
        if b_vec:
            b = b.reshape(b.size, 1)
        if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
            return None   # (CuPy's own raises its error)
        a = a.T   # (``dot`` rolls the summed axis first)
        k = a.shape[0]
        if k == 0 or a.size == 0 or b.size == 0:
            return None
        m, n = b.size // k, a.size // k
        if m == 1 and n == 1:
            return None   # (CuPy multiplies and sums)
        shape = (() if a_vec else (a.shape[1],)) + (() if b_vec else (b.shape[1],))
        dtype = a.dtype
        a, trans_a, lda = self._laid_out(a, 0)
        b, trans_b, ldb = self._laid_out(b, 1)
        c = cp.empty(shape, dtype)
        one, zero = self._one_and_zero(dtype)
        algo = (self._cublas.CUBLAS_GEMM_DEFAULT_TENSOR_OP if self._capability >= 80
                else self._cublas.CUBLAS_GEMM_DEFAULT)
        cuda_type = self._cuda_types[dtype]
        self._on_stream("cublasGemmEx", trans_b, trans_a, m, n, k, one.ctypes.data,
                        b.data.ptr, cuda_type, ldb, a.data.ptr, cuda_type, lda,
                        zero.ctypes.data, c.data.ptr, cuda_type, m, self._compute(dtype), algo)
        return c

    def _batched(self, a: Any, b: Any) -> Any:
        """``matmul``'s strided batched GEMM for two C-contiguous batches of one batch shape
        (``cupy/_core/_routines_linalg.pyx``'s ``matmul``, no broadcasting); None: CuPy's own."""
        cp = self.cp
        if a.ndim != b.ndim or a.shape[:-2] != b.shape[:-2] or a.shape[-1] != b.shape[-2]:
            return None
        if a.size == 0 or b.size == 0:
            return None
        a, b = cp.ascontiguousarray(a), cp.ascontiguousarray(b)
        shape = a.shape[:-1] + (b.shape[-1],)
        batch = a.size // (a.shape[-2] * a.shape[-1])
        c = cp.empty(shape, a.dtype)
        first, second = b, a   # ((A B)^T = B^T A^T: cuBLAS reads column-major)
        k, n, m = first.shape[-2], first.shape[-1], second.shape[-2]
        cuda_type = self._cuda_types[a.dtype]
        one, zero = self._one_and_zero(a.dtype)
        self._on_stream("cublasGemmStridedBatchedEx", 0, 0, n, m, k, one.ctypes.data,
                        first.data.ptr, cuda_type, n, k * n, second.data.ptr, cuda_type, k,
                        m * k, zero.ctypes.data, c.data.ptr, cuda_type, n, m * n, batch,
                        cuda_type, self._cublas.CUBLAS_GEMM_DEFAULT)
        return c

