"""``gpuwb-backend``: run a pool and administer it.

    gpuwb-backend serve [options]       run a pool in the foreground
    gpuwb-backend users ...             the users file: add, list, set, remove
    gpuwb-backend usage ...             the usage log, summed per user or session
    gpuwb-backend keys ...              the pool's CurveZMQ key pair
    gpuwb-backend drain/undrain/move    move sessions between the devices of a running pool

Each command lives in its own module with a ``register(subparsers)`` that adds
its parser and sets ``func`` (called with the parsed arguments; returns the
exit code).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys

from pydantic import ValidationError

from .config import PoolSettings
from gpu_backend.door.frontdoor import FrontDoor
from gpu_backend.runtime.gc_pauses import settle
from gpu_backend.runtime.stacks import dump_on_request

__all__ = ["main", "build_parser", "serve", "add_serve_arguments"]


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    parser = parser or argparse.ArgumentParser(prog="gpuwb-backend", description="The gpu-workbench pool.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve_parser = sub.add_parser("serve", help="run a pool in the foreground")
    add_serve_arguments(serve_parser)
    serve_parser.set_defaults(func=serve)
    for register in _command_modules():
        register(sub)
    return parser


def _command_modules() -> list:
    """The ``register`` functions of the administration commands."""
    registers = []
    for name in ("cli_users", "cli_usage", "cli_keys", "cli_moves"):
        try:
            module = __import__(f"{__package__}.{name}", fromlist=["register"])
        except ModuleNotFoundError as exc:
            if exc.name != f"{__package__}.{name}":
                raise
            continue
        registers.append(module.register)
    return registers


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``serve``; unset ones fall back to GPUWB_* variables and GPUWB_CONFIG."""
    parser.add_argument("--listen", help="front-door address, e.g. tcp://0.0.0.0:5555")
    parser.add_argument("--devices", help="auto | cpu | GPU indices such as 0,1")
    parser.add_argument("--token-file", help="file whose first line is the token (single-token mode)")
    parser.add_argument("--key-file", help="the pool's CurveZMQ secret key file (gpuwb-backend keys); "
                                           "required off loopback")
    parser.add_argument("--users-file", help="TOML users file (see gpuwb-backend users)")
    parser.add_argument("--policy", choices=("fair", "share", "fifo", "none"),
                        help="how sessions share a device (default share)")
    parser.add_argument("--share-window-ms", type=float,
                        help="share policy: device milliseconds (weighted) a user with work may "
                             "run ahead of the user furthest behind before it is held back "
                             "(default 4)")
    parser.add_argument("--share-deep-lead-ms", type=float,
                        help="share policy: device milliseconds of work the sessions of the "
                             "heaviest users on a device may launch ahead; lighter users keep "
                             "4 ms (default 16; 0: everyone keeps 4 ms)")
    parser.add_argument("--share-anticipate-batch-ms", type=float,
                        help="share policy: a user whose batches average at most this many "
                             "milliseconds, and its gaps at most 1 ms, is waited for in its "
                             "gaps (default 8)")
    parser.add_argument("--share-light-gap-ms", type=float,
                        help="share policy: a user whose gaps between batches average at least "
                             "this many milliseconds (an interactive user) holds nobody back "
                             "for the first 2 ms of each batch (default 4; 0: no user does)")
    parser.add_argument("--share-gap-charge-ms", type=float,
                        help="share policy: a user back from a gap between its batches of at "
                             "most this many milliseconds (its loop's round trip) is charged "
                             "the gap as its own time, as it would be alone (default 1; 0: "
                             "none is)")
    parser.add_argument("--share-forget-idle-ms", type=float,
                        help="share policy: a user back to a device nobody used for this many "
                             "milliseconds starts every user level, what each had banked or "
                             "owed forgotten (default 50; 0: never)")
    parser.add_argument("--company-idle-ms", type=float,
                        help="share policy: a session with no work whose worker has said "
                             "nothing for this many milliseconds is no company to the others "
                             "on its device, which launch as alone (default 1000; 0: every "
                             "session attached is company; else at least 50)")
    parser.add_argument("--quantum-ms", type=float,
                        help="fair policy: the least device milliseconds a session keeps the "
                             "device while others wait (default 2)")
    parser.add_argument("--period-ms", type=float,
                        help="fair policy: device milliseconds in which every backlogged user "
                             "gets one turn, its weight's share of them (default 20; 0: every "
                             "turn is --quantum-ms)")
    parser.add_argument("--usage-log", help="append-only usage log (JSON lines)")
    parser.add_argument("--memory-limit", type=int, help="bytes of device memory per session")
    parser.add_argument("--lease-timeout", type=float, help="seconds without heartbeat")
    parser.add_argument("--spare-workers", type=int, help="warm workers per device")
    parser.add_argument("--ready-timeout", type=float,
                        help="seconds a new worker may take to say ready before it is ended and "
                             "replaced (default 60)")
    parser.add_argument("--no-worker-zygote", dest="worker_zygote", action="store_const",
                        const=False, help="start each worker as a new Python process (default: "
                                          "fork it from a zygote with its imports done)")
    parser.add_argument("--worker-spin-ms", type=float,
                        help="a worker holding a spin slot polls this long after each message (0: off)")
    parser.add_argument("--spin-slots", type=int,
                        help="workers that may spin that long at once (default: half the cores less one)")
    parser.add_argument("--metrics-port", type=int,
                        help="serve Prometheus metrics on this port (/metrics)")
    parser.add_argument("--metrics-address",
                        help="the metrics server's address (default 127.0.0.1)")
    parser.add_argument("--no-same-host", dest="same_host", action="store_const", const=False,
                        help="serve tcp:// only (no ipc:// endpoints for clients on this host)")
    parser.add_argument("--cluster", metavar="ADDRESS",
                        help="serve the GPU hosts of this Ray cluster (auto, or HOST:PORT of its "
                             "head; pip install 'gpu-workbench[cluster]'): docs/cluster.md")
    parser.add_argument("--cluster-devices", choices=("gpu", "numpy"),
                        help="with --cluster: each host serves its GPUs (default), or a NumPy "
                             "device per GPU it declares to Ray (tests and demos)")
    parser.add_argument("--swap-idle", type=float,
                        help="seconds idle after which a session's arrays are swapped out to "
                             "host memory or --swap-dir (default 600): docs/swap.md")
    parser.add_argument("--swap-dir", help="where swapped sessions' files go, and where a "
                                           "stopped pool parks its sessions for the next one "
                                           "(default: a folder of the pool's run directory, "
                                           "removed with it: no sessions kept over a restart)")
    parser.add_argument("--swap-cap", type=int, help="bytes each user may have swapped out")
    parser.add_argument("--swap-dir-shared", action="store_const", const=True,
                        help="--swap-dir is one filesystem every host mounts at the same path: "
                             "sessions may move between hosts through it")
    parser.add_argument("--park-idle", type=float,
                        help="seconds a swapped-out session may stay idle before its worker "
                             "exits, giving back its device context (default 1800)")
    parser.add_argument("--rebalance-idle", type=float,
                        help="seconds a session may stay idle before the pool may move it to "
                             "an emptier device of its host (default 600)")
    parser.add_argument("--swap-host-memory", type=int,
                        help="bytes of each host's memory its swapped sessions may hold "
                             "(default: a quarter of it; 0: files only)")
    parser.add_argument("-v", "--verbose", action="store_true")


#: serve's options that map one to one onto PoolSettings fields
SERVE_SETTINGS = ("listen", "devices", "token_file", "key_file", "users_file", "policy", "quantum_ms", "period_ms", "share_window_ms",
                  "share_deep_lead_ms", "share_light_gap_ms", "share_gap_charge_ms",
                  "share_anticipate_batch_ms",
                  "share_forget_idle_ms", "company_idle_ms",
                  "usage_log", "memory_limit", "lease_timeout", "spare_workers", "ready_timeout",
                  "worker_zygote", "same_host",
                  "worker_spin_ms", "spin_slots",
                  "metrics_port", "metrics_address", "cluster", "cluster_devices",
                  "swap_idle", "swap_dir", "swap_cap", "swap_host_memory", "park_idle",
                  "swap_dir_shared", "rebalance_idle")


def serve(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(name)s %(message)s")
    given = {k: getattr(args, k) for k in SERVE_SETTINGS if getattr(args, k, None) is not None}
    try:
        settings = PoolSettings(**given)
    except ValidationError as exc:   # (a malformed option, GPUWB_* variable or GPUWB_CONFIG entry)
        for error in exc.errors():
            where = ".".join(str(part) for part in error["loc"]) or "settings"
            message = error["msg"].removeprefix("Value error, ")
            said = message if message.startswith(where) else f"{where}: {message}"
            print(f"gpuwb-backend serve: {said}", file=sys.stderr)
        return 2
    if settings.usage_log is None:
        from gpu_backend.accounting.usage import default_log_path
        settings.usage_log = default_log_path()
    generated = settings.token is None and settings.token_file is None and settings.users_file is None
    try:
        door = FrontDoor(settings)
    except ModuleNotFoundError as exc:   # --cluster without Ray
        print(f"gpuwb-backend serve: {exc.name} is not installed: "
              "pip install 'gpu-workbench[cluster]'", file=sys.stderr)
        return 2
    except (ValueError, OSError) as exc:  # InsecureListenError (no key off loopback), a bad key file
        print(f"gpuwb-backend serve: {exc}", file=sys.stderr)
        return 2
    def stop_parking(*_: object) -> None:   # SIGTERM: the sessions wait for the next pool
        door.park_at_stop = True            # (where it has a swap directory: restarts.py)
        door.stop()

    signal.signal(signal.SIGTERM, stop_parking)
    door.restartable = True
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, lambda *_: door.request_reload())
    serving = (f"the GPU hosts of the Ray cluster at {settings.cluster} (agents connect to "
               f"{door.cluster.agents.address})" if door.cluster is not None
               else f"devices {','.join(door.devices)}")
    print(f"gpu-workbench pool listening on {door.address} with {serving}"
          + (f", encrypted (CurveZMQ, key {settings.key_file})" if settings.key_file else ""),
          flush=True)
    if door.local_address:
        print(f"clients on this host: {door.local_address}", flush=True)
    if generated:
        print(f"token (generated; pass --token-file to fix it): {door.token}", flush=True)
    mode = f"users from {settings.users_file}" if settings.users_file else "single token"
    policy = settings.policy + ((f" (turns of {settings.period_ms:g} ms shared by weight, at least "
                                 f"{settings.quantum_ms:g} ms)" if settings.period_ms else
                                 f" (quantum {settings.quantum_ms:g} ms)")
                                if settings.policy == "fair" else
                                f" (a user held back {settings.share_window_ms:g} ms ahead; the "
                                f"heaviest users launch {settings.share_deep_lead_ms:g} ms deep; "
                                f"users away {settings.share_light_gap_ms:g} ms between batches "
                                f"are light; round trips up to {settings.share_gap_charge_ms:g} ms "
                                f"charged; a device idle {settings.share_forget_idle_ms:g} ms "
                                f"forgets)"
                                if settings.policy == "share" else "")
    print(f"policy {policy}; {mode}; usage log {settings.usage_log}", flush=True)
    if door.metrics_server is not None:
        print(f"Prometheus metrics on http://{settings.metrics_address}:"
              f"{door.metrics_server.server_port}/metrics", flush=True)
    dump_on_request(settings.stacks)   # (GPUWB_STACKS=1: stacks on SIGUSR2, a diagnostic)
    settle()   # the arbiter's thread shares this interpreter: no full collections of start-up
    try:
        door.run()
    except KeyboardInterrupt:
        door.stop()
    if door.restart_requested:   # (gpuwb-backend restart: its sessions are parked for us)
        print("gpu-workbench pool restarting", flush=True)
        if door.listener is not None:   # (the port stays the pool's: door/listener.py)
            door.listener.pass_on()
        os.execv(sys.executable, sys.orig_argv)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
