"""The ``%gpu`` line magic and the ``%%gpu_time`` cell magic (``%load_ext workbench``).

``%gpu`` parses its line with IPython's ``magic_arguments`` (one subparser per
subcommand, so ``%gpu?`` documents them all). Each magic *returns* a view from
:mod:`workbench.views` rather than printing: Jupyter shows it as HTML, a
terminal IPython as text, and the value can be kept (``m = %gpu memory``).
Every mistake a person can make (an unknown subcommand, a missing address, two
sources of token, no session) raises ``UsageError``, which IPython shows as one
line instead of a traceback.

The magics act on the process-wide :data:`workbench.connection.workbench`,
the same connection the remote-GPU kernel opens at start.
"""

from __future__ import annotations

import argparse
import difflib
import os
import shlex
import time
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import ArgDecorator, magic_arguments

import kernelproxy
from gpu_backend.config import read_token
from gpu_backend.security import load_public_key

from catalog.magic_parser import CommandParser

from .argv_values import glue_option_values
from .connection import workbench
from .pool_views import device_name as _device_name
from .pool_views import percent as _percent
from .pool_views import sessions_view, share_view, status_group
from .views import GroupView, KeyValueView, TableView, View, human_bytes, human_duration

__all__ = ["GPUMagics", "COMMANDS", "NOT_CONNECTED"]

COMMANDS = ("status", "info", "sessions", "share", "memory", "connect", "disconnect", "sync")
NOT_CONNECTED = "not connected: %gpu connect ADDRESS, or use the remote-GPU kernel"


class _subcommands(ArgDecorator):
    """The subcommands of ``%gpu``, put on the magic's parser by ``magic_arguments``."""

    def add_to_parser(self, parser, group):
        parser.prog = "%gpu"  # the subcommands' usage lines read '%gpu connect ...'
        sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands",
                                    parser_class=CommandParser)

        def command(name: str, summary: str, usage: str | None = None):
            return sub.add_parser(name, help=summary, description=summary, usage=usage,
                                  formatter_class=argparse.HelpFormatter)

        command("status", "the pool's devices and sessions, and this session's usage and "
                          "queue (the default command)")
        command("info", "this session's device: name, memory, compute capability, versions")
        command("sessions", "every session on the pool; yours is marked")
        p = command("share", "each user's share of the device over the last minutes: a plot in "
                             "notebooks, a table in terminals")
        p.add_argument("--minutes", type=float, default=5.0, help="how far back (at most 10)")
        p.add_argument("--device", help="which device (default: this session's)")
        command("memory", "this session's memory: used, limit, free, arrays (a sync point)")
        p = command("connect", "open a session on the pool at ADDRESS (closes the current one)",
                    usage="%(prog)s ADDRESS [--token T | --token-file F] [--server-key K|FILE] "
                          "[--devices N]")
        p.add_argument("address", metavar="ADDRESS", nargs="?",
                       help="the pool's front door, tcp://host:port (ipc://path on its host)")
        token = p.add_mutually_exclusive_group()
        token.add_argument("--token", metavar="T", help="the pool's access token")
        token.add_argument("--token-file", metavar="F",
                           help="a file holding the token (default: GPUWB_TOKEN or "
                                "GPUWB_TOKEN_FILE)")
        p.add_argument("--server-key", metavar="K|FILE",
                       help="pin the pool's public key (Z85, or its .pub file): the connection is "
                            "encrypted and a pool that cannot prove the key is refused (default: "
                            "GPUWB_SERVER_KEY(_FILE), or the known_pools file)")
        p.add_argument("--devices", metavar="N", type=int, default=None,
                       help="hold N of the pool's devices, cupy.cuda.Device(0) to Device(N-1), each "
                            "counted as a session (default: GPUWB_SESSION_DEVICES, else 1)")
        command("disconnect", "close this session (and an embedded pool); import cupy is undone")
        command("sync", "wait until every op sent so far has run on the device; shows how long")

        lines = []
        for name, p in sub.choices.items():
            first, *rest = p.format_usage().removeprefix("usage: ").rstrip().split("\n")
            lines.append("  " + first)
            lines.extend(line[len("usage: ") - 2:] for line in rest)
        parser.epilog = ("usage of each command:\n" + "\n".join(lines)
                         + "\n\nWith no command: status.  Time a cell with %%gpu_time.")
        parser.prog = "gpu"  # IPython's formatter adds the '%' to the top usage line
        return None


#: Options whose value may begin with "-": a token (urlsafe base64) or a Z85 key.
_OPAQUE_VALUE_OPTIONS = ("--token", "--token-file", "--server-key")


def _session() -> kernelproxy.Session:
    """The live session, or UsageError; a lost one is reopened when that is allowed."""
    old = workbench.session
    if old is None:
        raise UsageError(NOT_CONNECTED)
    try:
        session = workbench.require()
    except kernelproxy.PoolError as exc:  # lost, and not reopened (or reopening failed)
        raise UsageError(f"%gpu: {exc}") from None
    _carry_label(old, session)
    return session


def _carry_label(old: Any, new: kernelproxy.Session) -> None:
    """The kernel's hooks carry over to a new session: cell-line labels for errors
    (``location_label``) and the notebook's transfer progress (``progress``)."""
    if new is old:
        return
    for hook in ("location_label", "progress"):
        value = getattr(old, hook, None)
        if value is not None and getattr(new, hook, None) is None:
            setattr(new, hook, value)


def _cuda_version(v: Any) -> str:
    """CUDA's integer version (12040) as people write it (12.4)."""
    return f"{v // 1000}.{v % 1000 // 10}" if isinstance(v, int) and v > 0 else str(v)


def _pool_status(session: kernelproxy.Session, command: str, history: float | None = None) -> dict:
    try:
        return session.status(history=history)
    except kernelproxy.SessionLostError as exc:  # the front door did not answer
        raise UsageError(f"%gpu {command}: {exc}") from None


def _mine(session: kernelproxy.Session, status: dict, default: Any = None) -> Any:
    return next((s for s in status.get("sessions", []) if s.get("session") == session.id), default)


# -- the views of each command ----------------------------------------------------------

_DEVICE_LABELS = {
    "name": "name", "kind": "kind", "index": "index", "compute_capability": "compute capability",
    "multiprocessors": "multiprocessors", "memory_total": "memory total",
    "memory_free": "memory free (when the session opened)", "cupy": "CuPy",
    "cuda_runtime": "CUDA runtime", "numpy": "NumPy", "stream_bytes": "uploads streamed above",
}


def info_view(session: kernelproxy.Session) -> KeyValueView:
    device = dict(session.device)
    rows: list[tuple[str, Any]] = []
    for key in list(_DEVICE_LABELS) + [k for k in device if k not in _DEVICE_LABELS]:
        if key not in device:
            continue
        value = device[key]
        if key in ("memory_total", "memory_free", "stream_bytes"):
            value = human_bytes(value) if value is not None else ("not streamed" if key == "stream_bytes"
                                                                  else "—")
        elif key == "cuda_runtime":
            value = _cuda_version(value)
        rows.append((_DEVICE_LABELS.get(key, key), value))
    rows += [("session", session.id), ("pool", session.address),
             ("session memory limit", human_bytes(session.memory_limit))]
    data: dict = {"device": device}
    if session.group is not None:   # the client's other devices, one row each
        for member in session.group[1:]:
            other = member.device
            rows.append((f"device {member.ordinal}",
                         f"{_device_name(other)}, {human_bytes(other.get('memory_total'))} "
                         f"(session {member.id})"))
        data["devices"] = [dict(member.device) for member in session.group]
    title = (f"Device of session {session.id}" if session.group is None else
             f"Devices of this client (device 0: session {session.id})")
    return KeyValueView(title, rows, data=data)


def status_view(session: kernelproxy.Session) -> GroupView:
    # the queue first: asking the pool sends nothing on the session, so nothing here syncs
    queued, in_flight = len(session._ops), len(session._in_flight)
    status = _pool_status(session, "status")
    mine = _mine(session, status) or {}
    note = ("usage as the worker last reported it to the pool (every ~0.5 s): work is queued "
            "or running; %gpu memory asks the worker now")
    if not queued and not in_flight and mine:
        # nothing would wait: the worker's own figures now, in this view and the pool's
        # table (as reported, they lagged the next cell's %gpu memory by up to 0.5 s)
        now = session.memory_info()
        mine.update(memory_used=now.get("memory_used"), arrays=now.get("arrays"),
                    ops=now.get("ops"))
        note = ("memory, arrays and ops asked of the worker now; device time as the worker "
                "last reported it to the pool (every ~0.5 s)")
    you = KeyValueView(f"This session ({session.id})", [
        ("device", f"{mine.get('device', '?')} {_device_name(session.device)}"),
        ("memory used", f"{human_bytes(mine.get('memory_used'))} of "
                        f"{human_bytes(session.memory_limit)} "
                        f"({_percent(mine.get('memory_used'), session.memory_limit)})"),
        ("arrays", mine.get("arrays")),
        ("ops run / issued", f"{mine.get('ops', '—')} / {session.ops_issued}"),
        ("ops queued (not sent)", queued),
        ("batches in flight", in_flight),
        ("device time (measured by the pool)", human_duration(mine.get("device_seconds"))),
        ("worker busy", human_duration(session.worker_seconds)),
        # (only %%gpu_time cells time their batches: "timed" beside the pool's figure said
        # nothing of that, and read as the session's device time being 0 s)
        ("device time in %%gpu_time cells",
         human_duration(session.device_seconds) if session.device_seconds
         else "0 s (only %%gpu_time cells count)"),
        ("reconnects", workbench.reconnects),
        ("stretch replay", _stretch_line(session)),
    ], note=note)
    members = session.group or [session]
    extra: list = [you]
    devices = []
    if session.group is not None:   # a client of several devices: each device's session
        for member in members:
            row = _mine(member, status) or {}
            devices.append({"ordinal": member.ordinal, "session": member.id, **row})
        rows = [[f"{d['ordinal']}: {_device_name(m.device)}", d["session"], d.get("device", "?"),
                 f"{human_bytes(d.get('memory_used'))} of {human_bytes(m.memory_limit)}",
                 d.get("arrays"), d.get("ops"), human_duration(d.get("device_seconds"))]
                for d, m in zip(devices, members)]
        caption = "cupy.cuda.Device(k) runs on device k's session"
        extra.append(TableView("This client's devices", [
            "Device", "Session", "Pool device", "Memory", "Arrays", "Ops", "Device time"], rows,
            numeric={"Arrays", "Ops", "Device time"}, no_wrap={"Device", "Session"},
            caption=caption, narrow=TableView(   # (80 columns: the figures that matter most)
                "This client's devices", ["Device", "Session", "Memory", "Ops"],
                [[r[0], r[1], r[3], r[5]] for r in rows], numeric={"Ops"},
                no_wrap={"Session"}, caption=caption)))
    view = status_group(status, mine=[m.id for m in members], runs_in=workbench.pool_runs_in,
                        extra=extra)
    view.data.update(queued_ops=queued, batches_in_flight=in_flight, mine=mine)
    if devices:
        view.data["devices_of_client"] = devices
    return view


def _stretch_line(session: kernelproxy.Session) -> str:
    """Stretch replay as this client saw it (docs/stretch-replay.md): held, replays, those not
    through graphs, those let go."""
    if session.stretches is None:
        return "off (GPUWB_GRAPHS=0)"
    f = session.stretches.figures()
    line = (f"{f['held']} stretch{'es' if f['held'] != 1 else ''} held, {f['replays']:,} "
            f"replays, {f['not_graphed']:,} not through graphs")
    if f["released"]:
        line += f", {f['released']} let go (replays not faster)"
    if f["refused"]:
        line += f", {f['refused']} offers refused"
    return line


def memory_view(session: kernelproxy.Session) -> KeyValueView:
    info = session.memory_info()
    used, limit = info.get("memory_used") or 0, info.get("memory_limit") or session.memory_limit
    free = limit - used
    device = info.get("device") or session.device
    rows: list[tuple[str, Any]] = [
        ("used", human_bytes(used)), ("limit", human_bytes(limit)), ("free", human_bytes(free)),
        ("used of limit", _percent(used, limit)), ("arrays", info.get("arrays")),
        ("ops run", info.get("ops")),
    ]
    data = {"memory_used": used, "memory_limit": limit, "memory_free": free,
            "arrays": info.get("arrays"), "ops": info.get("ops")}
    if device.get("kind") == "cupy":
        total, dev_free = device.get("memory_total"), device.get("memory_free")
        rows += [(f"device free ({_device_name(device)}, all sessions)", human_bytes(dev_free)),
                 ("device total", human_bytes(total))]
        data.update(device_memory_free=dev_free, device_memory_total=total)
    return KeyValueView(f"Memory of session {session.id} on {_device_name(device)}", rows,
                        data=data)


def connected_view(session: kernelproxy.Session) -> KeyValueView:
    return KeyValueView("Connected", [
        ("session", session.id), ("pool", session.address),
        ("device" if session.group is None else "devices",
         _device_name(session.device) if session.group is None else
         ", ".join(f"{s.ordinal}: {_device_name(s.device)}" for s in session.group)),
        ("memory limit", human_bytes(session.memory_limit)
         + ("" if session.group is None else " per device")),
        ("lease timeout", human_duration(session.lease_timeout)),
        ("embedded pool", "yes" if workbench.embedded else "no"),
        ("encryption", f"CurveZMQ, pool key {session.server_key.decode()}"
         if session.server_key else "none"),
    ], note="import cupy now runs on this session", data={"session": session.id,
                                                          "address": session.address})


# -- the magics -------------------------------------------------------------------------

def _quiet_custom_tb(etype, value, tb, tb_offset=None):
    """Stands in for IPython's traceback display while a timed cell runs (see gpu_time)."""
    return None


@magics_class
class GPUMagics(Magics):
    """Magics of the remote GPU session: ``%gpu`` and ``%%gpu_time``."""

    @line_magic
    @magic_arguments()
    @_subcommands()
    def gpu(self, line: str = ""):
        """The remote GPU session: its pool, device, memory and connection.

        Examples::

            %gpu                     # same as %gpu status
            %gpu info
            %gpu memory
            %gpu sessions
            %gpu share --minutes 3
            %gpu connect tcp://gpu-host:5555 --token-file ~/.gpuwb-token
            %gpu sync
            %gpu disconnect

        Returns a view: HTML in Jupyter, text in a terminal.
        """
        try:
            argv = shlex.split(line)
        except ValueError as exc:  # an unclosed quote
            raise UsageError(f"%gpu: cannot split the line: {exc}") from None
        if argv and not argv[0].startswith("-") and argv[0] not in COMMANDS:
            close = difflib.get_close_matches(argv[0], COMMANDS, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise UsageError(f"%gpu: unknown command {argv[0]!r}{hint} Commands: "
                             + ", ".join(COMMANDS))
        try:
            args = self.gpu.parser.parse_args(glue_option_values(argv, _OPAQUE_VALUE_OPTIONS))
        except UsageError as exc:
            message = str(exc)
            raise UsageError(message if message.startswith("%gpu") else f"%gpu: {message}") from None
        command = args.command or "status"
        return getattr(self, f"_{command}")(args)

    # ------------------------------------------------------------ subcommands
    def _status(self, args) -> View:
        return status_view(_session())

    def _info(self, args) -> View:
        return info_view(_session())

    def _sessions(self, args) -> View:
        session = _session()
        return sessions_view(_pool_status(session, "sessions"), session.id)

    def _share(self, args) -> View:
        session = _session()
        if not 0 < args.minutes <= 10:
            raise UsageError("%gpu share: --minutes is between 0 and 10 (the pool keeps 10 minutes)")
        status = _pool_status(session, "share", history=args.minutes * 60)
        device = args.device or _mine(session, status, {}).get("device")
        return share_view(status, args.minutes, device)

    def _memory(self, args) -> View:
        return memory_view(_session())

    def _connect(self, args) -> View:
        address = args.address
        if not address:
            raise UsageError("%gpu connect: missing ADDRESS (the pool's front door, tcp://host:port)")
        host, _, port = address.removeprefix("tcp://").rpartition(":")
        same_host = address.startswith("ipc://") and len(address) > len("ipc://")
        if not same_host and (not address.startswith("tcp://") or not host or not port.isdigit()):
            raise UsageError("%gpu connect: ADDRESS must look like tcp://host:port (or a pool's "
                             f"ipc://path on this host), not {address!r}")
        # everything is checked before workbench.connect, which closes the current session first
        token = args.token
        try:
            if args.token_file:
                token = read_token(Path(args.token_file).expanduser())
            elif token is None:
                token = workbench.settings.resolved_token()
        except (OSError, ValueError) as exc:
            raise UsageError(f"%gpu connect: cannot read the token file: {exc}") from None
        if not token:
            raise UsageError("%gpu connect: no token: pass --token T or --token-file F "
                             "(or set GPUWB_TOKEN / GPUWB_TOKEN_FILE)")
        server_key = os.path.expanduser(args.server_key) if args.server_key else None
        try:
            if server_key:
                load_public_key(server_key)
        except ValueError as exc:
            raise UsageError(f"%gpu connect: --server-key: {exc}") from None
        old = workbench.session
        try:
            session = workbench.connect(address, token, server_key, devices=args.devices)
        except (kernelproxy.PoolError, ValueError) as exc:  # refused (a wrong token or key,
            # another version...), or a known_pools file that does not parse
            closed = "; the previous session was closed" if old is not None else ""
            raise UsageError(f"%gpu connect: {address}: {exc}{closed}") from None
        _carry_label(old, session)
        return connected_view(session)

    def _disconnect(self, args) -> View:
        session, address, embedded = workbench.session, workbench.address, workbench.embedded
        if session is None:
            return KeyValueView("Disconnected", [("session", "none was open")])
        workbench.disconnect()
        return KeyValueView("Disconnected", [
            ("session", f"{session.id} closed"), ("pool", address),
            ("embedded pool", "stopped" if embedded else "no"),
        ], note="import cupy no longer reaches the pool; %gpu connect ADDRESS opens a new session",
            data={"session": session.id, "address": address})

    def _sync(self, args) -> View:
        session = _session()
        in_flight, queued = len(session._in_flight), len(session._ops)
        started = time.perf_counter()
        session.sync(device=True)
        seconds = time.perf_counter() - started
        return KeyValueView("Synced", [
            ("waited", human_duration(seconds)),
            ("batches in flight before", in_flight), ("ops queued before", queued),
        ], data={"seconds": seconds})

    # ------------------------------------------------------------ %%gpu_time
    @cell_magic
    def gpu_time(self, line: str = "", cell: str = ""):
        """Run the cell and show its wall time and the device time of its GPU work.

        Usage::

            %%gpu_time
            x = cp.random.rand(4096, 4096)
            y = x @ x

        While the cell runs, each batch of the session's ops is timed on the
        device (CUDA events; host time on the NumPy device). At the end the
        magic waits for the device, so the wall time includes all the work.
        Also shown: the worker's busy time (device work plus the worker's own
        handling), and the ops and batches the cell sent. An error in the cell
        is raised as usual, and timing is off again afterwards.
        """
        __tracebackhide__ = True  # noqa: F841 (IPython hides this frame in tracebacks)
        if line.strip():
            raise UsageError(f"%%gpu_time takes no arguments (got {line.strip()!r})")
        session = _session()
        shell = self.shell
        # a syntax error is raised here, before anything runs (as %%time does), and shown once
        shell.compile.ast_parse(shell.transform_cell(cell))
        session.sync()  # earlier work is not this cell's: let it finish first
        device0, worker0 = session.device_seconds, session.worker_seconds
        ops0, batches0 = session.ops_issued, session._batch
        # The cell's own error is not shown inside (run_code hands it to CustomTB, here a
        # no-op) but raised from this magic, so IPython shows it once, for this cell.
        saved = shell.custom_exceptions, shell.CustomTB
        outer = shell.displayhook.exec_result  # run_cell resets it: this cell's value needs it
        started = time.perf_counter()
        session.timing = True
        try:
            shell.custom_exceptions, shell.CustomTB = (BaseException,), _quiet_custom_tb
            try:
                result = shell.run_cell(cell)
            finally:
                shell.custom_exceptions, shell.CustomTB = saved
                shell.displayhook.exec_result = outer
            error = result.error_before_exec or result.error_in_exec
            if error is not None:
                tb = error.__traceback__
                if tb is not None and tb.tb_frame.f_code.co_name == "run_code":
                    tb = tb.tb_next  # IPython's own frame: not the cell's
                raise error.with_traceback(tb)
            session.sync(device=True)  # the cell's work is done on the device, too
        finally:
            session.timing = False
        wall = time.perf_counter() - started
        device = session.device_seconds - device0
        worker = session.worker_seconds - worker0
        ops, batches = session.ops_issued - ops0, session._batch - batches0
        return KeyValueView("GPU time of the cell", [
            ("wall", human_duration(wall)),
            ("device", f"{human_duration(device)} ({_percent(device, wall)} of wall)"),
            ("worker busy", f"{human_duration(worker)} ({_percent(worker, wall)} of wall)"),
            ("ops / batches", f"{ops} / {batches}"),
            ("on", f"{_device_name(session.device)} (session {session.id})"),
        ], data={"wall_seconds": wall, "device_seconds": device, "worker_seconds": worker,
                 "ops": ops, "batches": batches})
