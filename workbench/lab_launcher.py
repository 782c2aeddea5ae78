"""``gpuwb lab``: JupyterLab with the remote-GPU kernel, on a given pool or on one of its own.

Our options (``--pool``, ``--token-file``, ``--server-key``, ``--devices``) are read here;
every other argument goes to ``jupyter lab`` as typed, so ``gpuwb lab --no-browser --port
8899`` behaves as ``jupyter lab`` does (a bare ``--`` is dropped, for old habits).

The pool reaches the server extension and every kernel through the Jupyter server's
environment (``GPUWB_POOL``, ``GPUWB_TOKEN(_FILE)``, ``GPUWB_SERVER_KEY(_FILE)``), which
kernels inherit. Nothing shared is written: a kernelspec bound to a pool in the environment
would configure every other server started from it, and bind one user's token file to
everyone's kernel.

Without ``--pool`` (and no pool configured in the environment) one pool is started here,
in this process, for the server and all its kernels: the status bar and the panel show it,
and it ends when the server does. (Each kernel starting an embedded pool of its own gave a
panel that said "no pool" while every notebook ran one the server could not see.)

Signals: SIGTERM and SIGHUP are passed on to the server as SIGTERM, its clean stop (its
kernels are shut down), and this process waits for it before stopping the pool. SIGINT from
a terminal reaches the server itself (one process group), which asks whether to stop as
``jupyter lab`` does; without a terminal it is passed on.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from .argv_values import KEY_AND_TOKEN_OPTIONS, glue_option_values
from .kernelspec import KERNEL_NAME, kernel_transport, pool_env, server_key_problem

__all__ = ["build_parser", "main"]

#: How long the server may take to stop after SIGTERM before it is killed (seconds): it
#: shuts its kernels down first.
STOP_GRACE = 30.0
#: The variables that say which pool kernels use: replaced as a whole, so that a token of
#: the caller's shell never travels with another pool's address.
POOL_VARIABLES = ("GPUWB_POOL", "GPUWB_TOKEN", "GPUWB_TOKEN_FILE", "GPUWB_SERVER_KEY",
                  "GPUWB_SERVER_KEY_FILE", "GPUWB_POOL_OWNER")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gpuwb lab", allow_abbrev=False,   # --port must never be read as --pool
        description="JupyterLab with the remote-GPU kernel. Any option not listed here goes "
                    "to jupyter lab as typed (--no-browser, --port 8899, --ServerApp.…).")
    parser.add_argument("--pool", help="a pool's front door, tcp://host:port (default: the "
                        "environment's GPUWB_POOL, else a pool of this server's own)")
    parser.add_argument("--token-file", help="the file holding your token for --pool")
    parser.add_argument("--server-key", metavar="K|FILE",
                        help="the pool's public key to pin (Z85, or its .pub file); default: "
                             "the known_pools file")
    parser.add_argument("--devices", default="auto",
                        help="the own pool's devices: auto (GPUs if CuPy sees any), cpu, or "
                             "GPU indices such as 0,1")
    return parser


def split_arguments(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """Our options, and the rest for ``jupyter lab`` in their order."""
    args, rest = build_parser().parse_known_args(glue_option_values(argv, KEY_AND_TOKEN_OPTIONS))
    return args, [word for word in rest if word != "--"]


def main(argv: list[str]) -> int:
    args, lab_args = split_arguments(argv)
    try:
        importlib.import_module("jupyterlab")
    except ImportError:
        print("gpuwb lab needs JupyterLab: pip install 'gpu-workbench[lab]'", file=sys.stderr)
        return 2
    if args.pool is None and (args.token_file or args.server_key):
        print("gpuwb lab: --token-file and --server-key go with --pool", file=sys.stderr)
        return 2
    if args.pool is not None and not args.token_file:
        print("gpuwb lab: --pool needs --token-file", file=sys.stderr)
        return 2
    problem = _check_files(args)
    if problem:
        print(f"gpuwb lab: {problem}", file=sys.stderr)
        return 2
    _say_about_the_kernelspec()   # (a missing Lab extension: the server extension says so)
    pool, chosen = None, None
    if args.pool is not None:
        chosen = pool_env(args.pool, args.token_file, args.server_key)
    elif not _pool_configured():
        pool = _own_pool(args.devices)
        if pool is None:
            return 1
        chosen = {"GPUWB_POOL": pool.address, "GPUWB_TOKEN": pool.token,
                  "GPUWB_POOL_OWNER": "gpuwb lab's process (it ends with the server)"}
    env = dict(os.environ)
    if chosen is not None:   # replaced as a whole (POOL_VARIABLES)
        env = {k: v for k, v in env.items() if k not in POOL_VARIABLES} | chosen
    if not any(word.startswith("--KernelManager.transport") for word in lab_args):
        lab_args = [f"--KernelManager.transport={kernel_transport()}", *lab_args]
    try:
        return run_server([sys.executable, "-m", "jupyter", "lab", *lab_args], env)
    finally:
        if pool is not None:
            pool.stop()


def _check_files(args: argparse.Namespace) -> str | None:
    """A clear word now for a token file or key that cannot be read (else every kernel
    would fail on it later, one by one)."""
    if args.token_file:
        from gpu_backend.config import read_token
        try:   # (expanded as pool_env expands it for the kernels: "--token-file=~/t")
            read_token(Path(args.token_file).expanduser())
        except (OSError, ValueError) as exc:
            return f"--token-file: {exc}"
    problem = args.server_key and server_key_problem(args.server_key)
    return f"--server-key: {problem}" if problem else None


def _pool_configured() -> bool:
    """Whether the environment already names the kernels' pool (GPUWB_POOL, or a client
    config file): then the server and its kernels use that one."""
    from .connection import ClientSettings
    try:
        return ClientSettings().pool is not None
    except ValueError:   # a broken config: the kernels will say so
        return True


def _own_pool(devices: str):
    """Start this server's pool; None (and why, on stderr) if it cannot start."""
    from gpu_backend.pool import LocalPool
    try:
        pool = LocalPool(devices=devices).start()
        address = pool.address
    except Exception as exc:   # a bad --devices, no free port: say so, start no server
        print(f"gpuwb lab: could not start a pool on {devices!r}: {exc}", file=sys.stderr)
        return None
    print(f"gpuwb lab: a pool of this server's own ({devices} devices) at {address}; it "
          "ends with the server", file=sys.stderr)
    return pool


def _say_about_the_kernelspec() -> None:
    """The kernel's spec ships with the package. Say so if it is missing, or if the one
    Jupyter finds is bound to a pool of its own (``gpuwb install-kernel --pool``): its
    binding then wins over this server's pool in every kernel."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
    try:
        spec = KernelSpecManager().get_kernel_spec(KERNEL_NAME)
    except NoSuchKernel:
        print(f"gpuwb lab: no {KERNEL_NAME!r} kernelspec is installed; `gpuwb install-kernel "
              "--sys-prefix` installs it", file=sys.stderr)
        return
    bound = spec.env.get("GPUWB_POOL")
    if bound:
        print(f"gpuwb lab: note: the installed {KERNEL_NAME!r} kernelspec "
              f"({spec.resource_dir}) is bound to the pool {bound}; its kernels use that pool",
              file=sys.stderr)


def run_server(command: list[str], env: dict[str, str]) -> int:
    """Run the Jupyter server and wait for it, passing stop signals on (see the module's
    docstring); one that has not stopped STOP_GRACE seconds after SIGTERM is killed (its
    kernels were told). Returns its exit status."""
    server = subprocess.Popen(command, env=env)
    interactive = sys.stdin is not None and sys.stdin.isatty()
    stop_sent: float | None = None

    def stop(signum, _frame) -> None:
        nonlocal stop_sent
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
            stop_sent = stop_sent or time.monotonic()

    def interrupt(signum, _frame) -> None:
        if not interactive and server.poll() is None:   # (a terminal's ^C reached it already)
            server.send_signal(signal.SIGINT)

    previous = {sig: signal.signal(sig, handler) for sig, handler in
                ((signal.SIGTERM, stop), (signal.SIGHUP, stop), (signal.SIGINT, interrupt))}
    try:
        while True:   # (a wait of a second at a time: the grace after a stop is timed here)
            try:
                return server.wait(1.0)
            except subprocess.TimeoutExpired:
                if stop_sent is not None and time.monotonic() - stop_sent > STOP_GRACE:
                    server.kill()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if server.poll() is None:   # leaving by an error of ours: leave no server behind
            server.kill()
            server.wait()
