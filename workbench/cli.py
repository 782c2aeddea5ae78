"""The ``gpuwb`` command.

    gpuwb demo [--devices auto|cpu]     the quickstart notebook on an embedded pool
    gpuwb lab [--pool ADDR --token-file F [--server-key K]] [--devices D] [jupyter lab options]
    gpuwb pool [serve options]          run a pool (same as ``gpuwb-backend serve``)
    gpuwb status --pool ADDR --token-file F [--server-key K|FILE] [--json] [--wide]
    gpuwb install-kernel [--user|--sys-prefix|--prefix P] [--name N] [--display-name D]
                         [--pool ADDR [--token-file F] [--server-key K|FILE]]
    gpuwb catalog [list|search|show|compare|filter|export] ...   (same as ``python -m catalog``)
"""

from __future__ import annotations

import argparse
import json
import sys

from .argv_values import KEY_AND_TOKEN_OPTIONS, glue_option_values

__all__ = ["main", "build_parser"]

SERVER_KEY_HELP = ("the pool's public key to pin (Z85, or its .pub file); default: the "
                   "known_pools file")


def build_parser() -> argparse.ArgumentParser:
    from gpu_backend.cli import add_serve_arguments

    parser = argparse.ArgumentParser(prog="gpuwb", description="gpu-workbench: CuPy on a shared remote GPU pool")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the quickstart notebook on an embedded local pool")
    demo.add_argument("--devices", default="auto", help="auto (GPUs if CuPy sees any) or cpu")
    demo.add_argument("--notebook", help="another notebook to run instead of the quickstart")
    sub.add_parser("lab", add_help=False,
                   help="start JupyterLab with the remote-GPU kernel (see gpuwb lab -h)")
    add_serve_arguments(sub.add_parser("pool", help="run a pool in the foreground"))
    status = sub.add_parser("status", help="a pool's devices, users and shares, sessions")
    status.add_argument("--pool", required=True, help="front-door address, tcp://host:port")
    status.add_argument("--token-file", required=True)
    status.add_argument("--server-key", metavar="K|FILE", help=SERVER_KEY_HELP)
    status.add_argument("--json", action="store_true", help="the raw status as JSON")
    status.add_argument("--wide", action="store_true",
                        help="every column, however wide (default: tables fit the terminal, "
                             "80 columns when piped)")
    install = sub.add_parser("install-kernel", help="install the remote-GPU kernelspec")
    where = install.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="for this user (~/.local/share/jupyter)")
    where.add_argument("--sys-prefix", action="store_true", help="into this environment")
    where.add_argument("--prefix", help="under PREFIX/share/jupyter")
    install.add_argument("--name", default="remote-gpu")
    install.add_argument("--display-name", default="Python 3 (remote GPU)")
    install.add_argument("--pool", help="bind the kernel to this pool (else: an embedded pool)")
    install.add_argument("--token-file", help="the pool's token file, for --pool")
    install.add_argument("--server-key", metavar="K|FILE", help=SERVER_KEY_HELP + "; for --pool")
    sub.add_parser("catalog", add_help=False, help="browse the research catalogue (see gpuwb catalog -h)")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["catalog"]:  # the catalogue parses its own arguments, as %catalog does
        from catalog.__main__ import main as catalog_main
        return catalog_main(argv[1:], prog="gpuwb catalog")
    if argv[:1] == ["lab"]:  # ours, and the rest for jupyter lab as typed
        from .lab_launcher import main as lab_main
        return lab_main(argv[1:])
    args = build_parser().parse_args(glue_option_values(argv, KEY_AND_TOKEN_OPTIONS))

    if args.command == "demo":
        from pathlib import Path

        from .demo import run_demo
        return run_demo(args.devices, Path(args.notebook) if args.notebook else None)
    if args.command == "pool":
        from gpu_backend.cli import serve
        return serve(args)
    if args.command == "status":
        import zmq

        from gpu_backend.config import read_token
        from gpu_backend.protocol.errors import PoolError
        from gpu_backend.security import resolve_server_key
        from kernelproxy.connection import door_request
        try:
            server_key = resolve_server_key(args.pool, args.server_key)
            reply = door_request(zmq.Context.instance(), args.pool,
                                 {"t": "status", "token": read_token(args.token_file)}, 10,
                                 server_key=server_key, check_handshake=True)
        except (PoolError, ValueError, OSError) as exc:
            print(f"gpuwb status: {args.pool}: {exc}", file=sys.stderr)
            return 1
        if args.json:
            json.dump(reply, sys.stdout, indent=1, default=str)
            print()
        else:
            from rich.console import Console

            from .pool_views import status_group
            from .views import natural_width
            view, console = status_group(reply), Console()
            if args.wide:   # every column on one line, however wide the lines get
                console = Console(width=max(console.width, natural_width(view, console)))
            console.print(view)
        return 0
    if args.command == "install-kernel":
        from .kernelspec import install_kernelspec
        if not _server_key_ok(args):
            return 2
        prefix = sys.prefix if args.sys_prefix else args.prefix
        path = install_kernelspec(user=args.user, prefix=prefix, name=args.name,
                                  display_name=args.display_name, pool=args.pool,
                                  token_file=args.token_file, server_key=args.server_key)
        print(f"installed kernelspec {args.name!r} in {path}")
        return 0
    return 2


def _server_key_ok(args: argparse.Namespace) -> bool:
    """--server-key, when given, is a public key or a readable file holding one."""
    from .kernelspec import server_key_problem
    problem = args.server_key and server_key_problem(args.server_key)
    if problem:
        print(f"gpuwb {args.command}: --server-key: {problem}", file=sys.stderr)
    return not problem


if __name__ == "__main__":
    sys.exit(main())
