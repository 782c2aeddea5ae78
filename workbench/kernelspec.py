"""Installing the "Python 3 (remote GPU)" kernelspec.

The wheel already ships it as shared data (``share/jupyter/kernels/remote-gpu``),
so ``pip install`` makes it visible in that environment; ``gpuwb install-kernel``
installs it elsewhere (``--user``, ``--sys-prefix``, ``--prefix``), under another
name, or bound to a pool (the pool's address, token file and pinned public key
go into the kernelspec's environment).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from jupyter_client.kernelspec import KernelSpecManager

from gpu_backend.security import load_public_key

__all__ = ["KERNEL_NAME", "DISPLAY_NAME", "kernel_json", "pool_env", "install_kernelspec",
           "kernel_transport", "kernel_manager_options", "server_key_problem"]

KERNEL_NAME = "remote-gpu"
DISPLAY_NAME = "Python 3 (remote GPU)"


def kernel_json(display_name: str = DISPLAY_NAME, pool: str | None = None,
                token_file: str | None = None, python: str | None = None,
                server_key: str | None = None) -> dict:
    """The kernel.json contents (as ipykernel writes its own, plus our env)."""
    spec = {
        "argv": [python or sys.executable, "-m", "workbench.kernel", "-f", "{connection_file}"],
        "display_name": display_name,
        "language": "python",
        "interrupt_mode": "signal",
        "metadata": {"debugger": True},
        "kernel_protocol_version": "5.5",
    }
    env = pool_env(pool, token_file, server_key)
    if env:
        spec["env"] = env
    return spec


def pool_env(pool: str | None = None, token_file: str | None = None,
             server_key: str | None = None) -> dict[str, str]:
    """The environment that points a kernel (and the Jupyter server extension) at *pool*:
    ``GPUWB_POOL``, ``GPUWB_TOKEN_FILE`` (an absolute path: a kernel's working directory is
    its notebook's) and the pinned key, as ``GPUWB_SERVER_KEY`` or ``GPUWB_SERVER_KEY_FILE``."""
    env = {}
    if pool:
        env["GPUWB_POOL"] = pool
    if token_file:
        env["GPUWB_TOKEN_FILE"] = str(Path(token_file).expanduser().resolve())
    if server_key:  # the pool's public key itself, or the file holding it
        if _is_key(server_key):
            env["GPUWB_SERVER_KEY"] = server_key.strip()
        else:
            env["GPUWB_SERVER_KEY_FILE"] = str(Path(server_key).expanduser().resolve())
    return env


#: The longest Unix socket path (sun_path holds 108 bytes with its NUL).
_SOCKET_PATH_MAX = 107
#: What an IPC kernel adds to the runtime directory: "/kernel-" + a UUID + "-ipc-" + a digit.
_IPC_SUFFIX = len("/kernel-") + 36 + len("-ipc-") + 1


def kernel_transport() -> str:
    """The transport for the kernels we launch (``gpuwb demo``, ``gpuwb lab``): ``ipc`` —
    Unix sockets in Jupyter's runtime directory, which only this user can reach — where
    their paths fit, else ``tcp``. Over loopback TCP a kernel's traffic is plain text to
    anyone on the host who can read it, and ipykernel says so at every start ("Kernel is
    running over TCP without encryption")."""
    from jupyter_core.paths import jupyter_runtime_dir
    return "ipc" if len(jupyter_runtime_dir()) + _IPC_SUFFIX <= _SOCKET_PATH_MAX else "tcp"


def kernel_manager_options() -> dict:
    """A ``KernelManager``'s transport, and for ``ipc`` a connection file in the runtime
    directory: the sockets' paths derive from it (without one they are relative to each
    process's working directory, and a kernel started in its notebook's folder is never
    found by its client)."""
    transport = kernel_transport()
    if transport == "tcp":
        return {"transport": "tcp"}
    import uuid

    from jupyter_core.paths import jupyter_runtime_dir
    runtime = Path(jupyter_runtime_dir())
    runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
    return {"transport": "ipc", "connection_file": str(runtime / f"kernel-{uuid.uuid4()}.json")}


def server_key_problem(server_key: str) -> str | None:
    """None when *server_key* is a public key or a readable file holding one; else why not
    (said at once by the commands, rather than by every kernel later)."""
    try:
        load_public_key(str(Path(server_key).expanduser()))
    except ValueError as exc:
        return str(exc)
    return None


def _is_key(text: str) -> bool:
    try:
        return load_public_key(text) == text.strip().encode()
    except ValueError:
        return False


def install_kernelspec(*, user: bool = False, prefix: str | None = None, name: str = KERNEL_NAME,
                       display_name: str = DISPLAY_NAME, pool: str | None = None,
                       token_file: str | None = None, server_key: str | None = None) -> str:
    """Install the kernelspec; returns the directory it went to."""
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "kernel.json").write_text(
            json.dumps(kernel_json(display_name, pool, token_file, server_key=server_key), indent=1))
        return KernelSpecManager().install_kernel_spec(
            tmp, kernel_name=name, user=user, prefix=prefix, replace=True)
