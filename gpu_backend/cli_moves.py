"""``gpuwb-backend drain | undrain | move``: move a running pool's sessions between its
devices without losing an array (issue 52; docs/swap.md, "Moves").

    gpuwb-backend drain cuda:1 [--pool tcp://HOST:PORT] [--wait 120]
    gpuwb-backend undrain cuda:1
    gpuwb-backend move SESSION cuda:0
    gpuwb-backend restart

``drain`` stops placing new sessions on the devices named and moves every session there
to the least-loaded other device; it waits until they have moved (or *--wait* seconds)
and prints where each went, or why it stayed. ``undrain`` takes the devices back.
``restart`` parks every session in the pool's swap directory and starts the pool again
(the same command line; its clients go on where they were: door/restarts.py). They
speak to the pool's administration socket (door/admin.py), which only the pool's own OS
user can reach: run them as that user, on the pool's host.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

import zmq

from gpu_backend.protocol.codec import packb, unpackb

from .config import PoolSettings

__all__ = ["register", "admin_request", "admin_address_for"]


def admin_address_for(pool: str) -> str:
    """The administration socket of the pool listening on *pool* (``tcp://HOST:PORT``),
    named as door/same_host.py names the pool's directory."""
    host, _, port = pool[len("tcp://"):].rpartition(":") if pool.startswith("tcp://") else ("", "", "")
    if not host or not port.isdigit():
        raise ValueError(f"--pool must look like tcp://HOST:PORT, not {pool!r}")
    name = f"gpuwb-pool-{''.join(c if c.isalnum() else '_' for c in host)[:20]}-{port}"
    base = "/tmp" if os.path.isdir("/tmp") else __import__("tempfile").gettempdir()
    return f"ipc://{os.path.join(base, name, 'admin')}"


def admin_request(address: str, msg: dict, timeout: float = 10.0) -> dict:
    """One request to the pool's administration socket at *address*; its answer."""
    path = address[len("ipc://"):]
    if not os.path.exists(path):
        raise ConnectionError(f"no pool's administration socket at {path} (is the pool "
                              "running on this host, with its same-host door, and are you "
                              "its OS user?)")
    info = os.stat(path)
    if info.st_uid != os.getuid() or info.st_mode & 0o077:   # (another user's, or open to all)
        raise ConnectionError(f"{path} is not a pool's administration socket of yours")
    ctx = zmq.Context.instance()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    try:
        sock.connect(address)
        sock.send(packb(msg))
        if not sock.poll(int(timeout * 1000)):
            raise TimeoutError(f"the pool did not answer within {timeout:g} s")
        return unpackb(sock.recv())
    finally:
        sock.close()


def register(subparsers: argparse._SubParsersAction) -> None:
    for name, helptext in (("drain", "move every session off these devices; place none there"),
                           ("undrain", "place sessions on these devices again")):
        parser = subparsers.add_parser(name, help=helptext, description=__doc__,
                                       formatter_class=argparse.RawDescriptionHelpFormatter)
        parser.add_argument("devices", nargs="+", metavar="DEVICE", help="cuda:N or cpu:N")
        _common(parser)
        parser.set_defaults(func=drain if name == "drain" else undrain)
    parser = subparsers.add_parser("restart", help="park every session, then start the pool "
                                   "again (its clients go on where they were)",
                                   description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    _common(parser)
    parser.set_defaults(func=restart)
    parser = subparsers.add_parser("move", help="move one session to another device",
                                   description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("session")
    parser.add_argument("device")
    _common(parser)
    parser.set_defaults(func=move)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pool", help="the pool's front-door address (default: the pool's "
                                       "settings, GPUWB_LISTEN or GPUWB_CONFIG)")
    parser.add_argument("--admin", help="the administration socket's ipc:// address "
                                        "(default: found from --pool)")
    parser.add_argument("--wait", type=float, default=120.0,
                        help="seconds to wait for the sessions to move (drain, move)")


def _ask(args: argparse.Namespace, msg: dict) -> dict | None:
    try:
        address = args.admin or admin_address_for(args.pool or PoolSettings().listen)
        reply = admin_request(address, msg)
    except (ValueError, ConnectionError, TimeoutError, zmq.ZMQError) as exc:
        print(f"gpuwb-backend {args.command}: {exc}", file=sys.stderr)
        return None
    if not reply.get("ok"):
        print(f"gpuwb-backend {args.command}: {reply.get('error')}", file=sys.stderr)
        return None
    return reply


def _wait_moved(args: argparse.Namespace, sessions: set[str]) -> list[dict]:
    """The pool's rows of *sessions* once none is moving (or --wait is over)."""
    deadline = time.monotonic() + args.wait
    while True:
        reply = _ask(args, {"t": "moves"}) or {}
        rows = [r for r in reply.get("sessions", []) if r["session"] in sessions]
        if not any(r.get("moving") for r in rows) or time.monotonic() > deadline:
            return rows
        time.sleep(0.2)


def _print_rows(rows: list[dict], asked: dict[str, Any]) -> None:
    for row in rows:
        where = row["device"]
        refused = row.get("refused")
        state = (f"moving to {row['moving']}" if row.get("moving") else
                 f"on {where}" + (f" (stayed: {refused})" if refused and where == asked.get(row["session"]) else ""))
        print(f"{row['session']}  {row['user']:<16} {state}")


def drain(args: argparse.Namespace) -> int:
    reply = _ask(args, {"t": "drain", "devices": args.devices})
    if reply is None:
        return 1
    started = {r["session"]: r["device"] for r in reply["moves"]}
    for row in reply["moves"]:
        if row.get("error"):
            print(f"{row['session']}  {row['user']:<16} stays on {row['device']}: {row['error']}")
    rows = _wait_moved(args, {s for s, r in zip(started, reply["moves"]) if not r.get("error")})
    _print_rows(rows, started)
    left = [r for r in rows if r["device"] in args.devices] + \
        [r for r in reply["moves"] if r.get("error")]
    print(f"draining {', '.join(reply['draining'])}: {len(started) - len(left)} of "
          f"{len(started)} sessions moved")
    return 0 if not left else 2


def undrain(args: argparse.Namespace) -> int:
    reply = _ask(args, {"t": "undrain", "devices": args.devices})
    if reply is None:
        return 1
    print(f"draining now: {', '.join(reply['draining']) or 'none'}")
    return 0


def move(args: argparse.Namespace) -> int:
    reply = _ask(args, {"t": "move", "session": args.session, "device": args.device})
    if reply is None:
        return 1
    rows = _wait_moved(args, {args.session})
    _print_rows(rows, {})
    return 0 if rows and rows[0]["device"] == args.device else 2


def restart(args: argparse.Namespace) -> int:
    reply = _ask(args, {"t": "restart"})
    if reply is None:
        return 1
    print(f"the pool parks its {reply['open']} sessions and starts again")
    return 0
