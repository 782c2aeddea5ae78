"""Kernel managers for the tests' Jupyter kernels, their channels Unix sockets in a directory
of the caller's: with TCP, jupyter_client picks free ports and the kernel binds them later,
and a test beside it binding meanwhile took one (a kernel that never started: "Address
already in use", a full-suite run of 2026-11-26)."""

import os

from jupyter_client.manager import KernelManager


def ipc_kernel_manager(kernel_name: str, directory: str) -> KernelManager:
    """A manager for *kernel_name* whose kernel's sockets are files in *directory*."""
    return KernelManager(kernel_name=kernel_name, transport="ipc",
                         ip=os.path.join(directory, "kernel"))
