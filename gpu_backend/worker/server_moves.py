"""The worker's part in a session's move (issue 52): parking or lending the session it
serves, holding a loan until the adopter has the arrays, and adopting one moved here.

A part of :class:`~gpu_backend.worker.server.WorkerServer` (which it is mixed into), kept
apart so that the serving loop's module stays the loop; it uses the server's control
channel, swap, executor, links and settings (``park_dir``, ``park_lend``, ``park_stream``,
``park_files``, ``bind_host``, ``key_file``, ``ctx``). What moves and how:
worker/handover.py; the stream to another host: worker/loan_stream.py.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import zmq

from ..protocol.errors import error_name
from . import handover
from .loan_stream import LoanReader, LoanServer

__all__ = ["SessionMoves", "ELSEWHERE_WAIT"]

#: how long a session whose arrays do not fit its device waits for the pool to say whether
#: it moves them elsewhere
ELSEWHERE_WAIT = 10.0


class SessionMoves:
    """The serving worker's methods for moves (see the module)."""

    def _park(self) -> bool:
        """Write the session out for the worker that takes it over (worker/handover.py) and
        tell the pool; whether it went (it may not: a remote object, a full disk, and then
        the session stays here, nothing lost)."""
        while not self.pool_gone and self.control.poll(0):   # (an "unpark" sent while a long
            # batch ran comes first)
            msg = self._read_control()
            if msg is not None:
                self._on_control(msg)
        if self.park_dir is None or self.closed:
            return False
        directory = self.park_dir or self.swap.directory or self.swap.default_directory
        self.park_dir = None
        # (messages committed ahead of their coming are undone: the batch the pool is told
        # ran is the last one read, and the client sends the others again to the new worker,
        # or here, where they are served quietly: worker/pushed_replies.py)
        self.lane.pushes.roll_back(self.lane, False)
        state = {"poisoned_at": self.executor.poisoned_at, "cancel_upto": self.cancel_upto,
                 "moved_for": self.moved_for}
        lent = None
        try:
            if directory is None:
                raise RuntimeError("the pool has no swap directory to park it in")
            self.executor.pacer.idle()
            if self.park_lend:
                lent = self._lend(Path(directory), state)
            if lent is not None:
                path, nbytes = lent.manifest, lent.nbytes
            elif not self.park_files:
                raise RuntimeError("its arrays are swapped out to this host's swap directory, "
                                   "which the other host does not mount (--swap-dir-shared): "
                                   "it can move once its next op has brought them back")
            else:
                path, nbytes = handover.park(self.swap, self.executor.replay, Path(directory),
                                             self._batch, state)
        except Exception as exc:
            self._send_control({"t": "parked", "error": f"{error_name(exc)}: {exc}"})
            return False
        if self._queue or self.links.poll(0):   # a batch came meanwhile: serve it here first
            if lent is not None:
                handover.end_loan(self.swap, lent)
            else:
                handover.adopt(path, self.swap, self.executor.replay)   # (its own, as swapped)
            self.park_dir = str(directory)   # (and park again once the loop is idle)
            return False
        self._last_usage_time = 0.0
        self._report_usage()   # (its last counts first: the pool carries them over)
        self._send_control({"t": "parked", "bytes": nbytes, "batch": self._batch,
                            "manifest": path if isinstance(path, bytes) else str(path),
                            **({"lent": True} if lent else {}),
                            **({"port": lent.server.port} if lent and lent.server else {})})
        if lent is not None and not self._hold_loan(lent):
            return False   # (the move failed: the session stays here, as it was)
        self.parked = self.closed = True
        return True

    def _elsewhere(self, exc: BaseException, nbytes: int, batch: int) -> bool:
        """The session's arrays do not fit its device again (*exc*, from its swap-in: the
        device is full and the pool could make no room): ask the pool to move it to a
        device with room for *nbytes*. Whether it does (told ``park``: the batch waiting is
        left unanswered, and its client sends it again to the next worker); only with no
        other message waiting (one sent after it must not run before it), and once for a
        batch (moved here for it already, it fails here)."""
        if (error_name(exc) != "OutOfMemoryError" or not self.room_refused or batch <= self.moved_for
                or self._queue or self.links.poll(0) or self.park_dir is not None):
            return False
        self._send_control({"t": "elsewhere", "want": int(nbytes)})
        deadline = time.monotonic() + ELSEWHERE_WAIT
        while not self.pool_gone and self.control.poll(max(0.0, deadline - time.monotonic())):
            msg = self._read_control()
            if msg is not None and msg.get("t") == "stay":
                return False
            if msg is not None:
                self._on_control(msg)
            if self.park_dir is not None:
                self.moved_for = batch
                return True
            if time.monotonic() > deadline:
                break
        return False

    def _lend(self, directory: Path, state: dict) -> Any:
        """The session lent for a move (worker/handover.py): in place within the host, or
        streamed from a port of this host to another (worker/loan_stream.py); None where it
        cannot be (swapped out: it parks instead)."""
        server = LoanServer(self.ctx, self.bind_host, self.key_file) if self.park_stream else None
        try:
            lent = handover.lend(self.swap, self.executor.replay, directory, self._batch,
                                 state, server)
        except BaseException:
            if server is not None:
                server.close()
            raise
        if lent is None and server is not None:
            server.close()
        return lent

    def _hold_loan(self, loan: Any) -> bool:
        """Keep the lent arrays (streaming them to the adopter that asks, for another host)
        until the pool says the adopting worker has them (``release``: then this worker
        ends, True) or that the move failed (``unpark``: it serves the session on, nothing
        lost, False). The pool gone ends the loan with this worker; the pool silent for
        LOAN_WAIT (longer than it waits for a spare and an adoption) is taken as ``unpark``:
        nothing is freed that nobody has."""
        poller = zmq.Poller()
        control = self.control.fileno()
        poller.register(control, zmq.POLLIN)
        server = loan.server
        if server is not None:
            poller.register(server.sock, zmq.POLLIN)
        deadline = time.monotonic() + handover.LOAN_WAIT
        while not self.pool_gone:
            if time.monotonic() > deadline:
                print("worker: the pool said nothing of a lent session: it is served on",
                      file=sys.stderr)
                handover.end_loan(self.swap, loan)
                return False
            events = dict(poller.poll(1000))
            if server is not None and server.sock in events:
                try:
                    handover.serve_loan(self.swap, loan)
                except Exception as exc:   # (its adopter failed: the pool hears it from there)
                    print(f"worker: a streamed move stopped: {error_name(exc)}: {exc}",
                          file=sys.stderr)
                    if server.sock.closed:
                        poller.unregister(server.sock)
                        server = None
            if control not in events:
                continue
            msg = self._read_control()
            kind = msg.get("t") if msg is not None else None
            if kind == "unpark":
                handover.end_loan(self.swap, loan)
                return False
            if kind in ("release", "stop"):
                break
            if kind == "reclaim":   # (always answered)
                self._hand_back_memory(asked=True)
            elif kind == "swap":    # (always answered: its arrays are lent, not swappable)
                self._send_control({"t": "swapped", "bytes": 0,
                                    "error": "RuntimeError: it is moving to another worker"})
        handover.end_loan(self.swap, loan)
        return True

    def _adopt(self, source: Any, address: Any = None) -> None:
        """Take over a session another worker parked or lent (the pool's ``assign`` names
        its manifest; *address*: the old worker's stream, on another host)."""
        folder = self.swap.directory or self.swap.default_directory

        def open_stream(secret: bytes, lanes: int) -> LoanReader:
            return LoanReader(self.ctx, address, secret, self.key_file, lanes)
        try:
            batch, nbytes, state = handover.adopt(
                source if isinstance(source, bytes) else Path(source), self.swap,
                self.executor.replay, Path(folder) if folder else None,
                open_stream if isinstance(address, str) else None)
        except Exception as exc:
            handover.discard(source)   # (the session ends, or stays with the worker that lent it)
            self._send_control({"t": "adopted", "error": f"{error_name(exc)}: {exc}"})
            self.adoption_failed = True   # (this worker serves nobody: it ends)
            return
        self._batch = batch
        if type(state.get("poisoned_at")) is int:   # (an error the client has not yet seen)
            self.executor.poisoned_at = state["poisoned_at"]
        if type(state.get("cancel_upto")) is int:
            self.cancel_upto = state["cancel_upto"]
        if type(state.get("moved_for")) is int:   # (moved here for a batch: not moved again for it)
            self.moved_for = state["moved_for"]
        self._send_control({"t": "adopted", "bytes": nbytes})
