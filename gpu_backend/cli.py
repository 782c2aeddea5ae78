"""``gpuwb-backend serve``: run a pool in the foreground."""

from __future__ import annotations

import argparse
import logging
import signal
import sys

from .config import PoolSettings
from .frontdoor import FrontDoor

__all__ = ["main", "build_parser", "serve"]


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    parser = parser or argparse.ArgumentParser(prog="gpuwb-backend", description="The gpu-workbench pool.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run a pool in the foreground")
    add_serve_arguments(serve)
    return parser


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``serve``; unset ones fall back to GPUWB_* variables and GPUWB_CONFIG."""
    parser.add_argument("--listen", help="front-door address, e.g. tcp://0.0.0.0:5555")
    parser.add_argument("--devices", help="auto | cpu | GPU indices such as 0,1")
    parser.add_argument("--token-file", help="file whose first line is the token")
    parser.add_argument("--memory-limit", type=int, help="bytes of device memory per session")
    parser.add_argument("--lease-timeout", type=float, help="seconds without heartbeat")
    parser.add_argument("--spare-workers", type=int, help="warm workers per device")
    parser.add_argument("-v", "--verbose", action="store_true")


def serve(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(name)s %(message)s")
    given = {k: v for k, v in {
        "listen": args.listen, "devices": args.devices, "token_file": args.token_file,
        "memory_limit": args.memory_limit, "lease_timeout": args.lease_timeout,
        "spare_workers": args.spare_workers,
    }.items() if v is not None}
    settings = PoolSettings(**given)
    generated = settings.token is None and settings.token_file is None
    door = FrontDoor(settings)
    signal.signal(signal.SIGTERM, lambda *_: door.stop())
    print(f"gpu-workbench pool listening on {door.address} with devices {','.join(door.devices)}",
          flush=True)
    if generated:
        print(f"token (generated; pass --token-file to fix it): {door.token}", flush=True)
    try:
        door.run()
    except KeyboardInterrupt:
        door.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "serve":
        return serve(args)
    return 2


if __name__ == "__main__":
    sys.exit(main())
