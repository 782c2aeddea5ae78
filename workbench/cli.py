"""The ``gpuwb`` command.

    gpuwb demo [--devices auto|cpu]   run the tour on an embedded pool
    gpuwb pool [serve options]        run a pool (same as ``gpuwb-backend serve``)
    gpuwb status --pool ADDR --token-file F
    gpuwb catalog [list|search|show|compare|filter|export] ...   (same as ``python -m catalog``)
"""

from __future__ import annotations

import argparse
import json
import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    from gpu_backend.cli import add_serve_arguments

    parser = argparse.ArgumentParser(prog="gpuwb", description="gpu-workbench: CuPy on a shared remote GPU pool")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the tour on an embedded local pool")
    demo.add_argument("--devices", default="auto", help="auto (GPUs if CuPy sees any) or cpu")
    add_serve_arguments(sub.add_parser("pool", help="run a pool in the foreground"))
    status = sub.add_parser("status", help="print a pool's status as JSON")
    status.add_argument("--pool", required=True, help="front-door address, tcp://host:port")
    status.add_argument("--token-file", required=True)
    sub.add_parser("catalog", add_help=False, help="browse the research catalogue (see gpuwb catalog -h)")
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["catalog"]:  # the catalogue parses its own arguments, as %catalog does
        from catalog.__main__ import main as catalog_main
        return catalog_main(argv[1:], prog="gpuwb catalog")
    args = parser.parse_args(argv)

    if args.command == "demo":
        from .demo import run_demo
        return run_demo(args.devices)
    if args.command == "pool":
        from gpu_backend.cli import serve
        return serve(args)
    if args.command == "status":
        import zmq

        from gpu_backend.config import read_token
        from kernelproxy.connection import door_request
        reply = door_request(zmq.Context.instance(), args.pool,
                             {"t": "status", "token": read_token(args.token_file)}, 10)
        json.dump(reply, sys.stdout, indent=1, default=str)
        print()
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
