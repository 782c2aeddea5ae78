"""The "Python 3 (remote GPU)" kernel: IPython whose ``import cupy`` runs on a pool.

A subclass of ipykernel's ``IPythonKernel`` that keeps ipykernel's own shell
class (rich and other libraries detect notebooks by its name). At start it
opens a session on the configured pool (``GPUWB_POOL`` and a token, or
``%gpu connect``), or on an embedded local pool that ends with the kernel;
it installs the ``cupy`` import hook and loads the ``workbench`` and
``catalog`` magics. After every cell it syncs the session, so the error of an
asynchronous op is shown on the cell that issued it, naming the op and the
cell line.
"""

from __future__ import annotations

import functools
import inspect
import sys
from typing import Any

from ipykernel.ipkernel import IPythonKernel

from . import __version__
from .connection import workbench
from .progress import NotebookProgress

__all__ = ["RemoteGPUKernel"]


class RemoteGPUKernel(IPythonKernel):
    implementation = "gpu-workbench"
    implementation_version = __version__
    banner = "Python 3 (remote GPU) — gpu-workbench: `import cupy` runs on the GPU pool"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._start_error: BaseException | None = None
        try:
            self._adopt(workbench.connect())
        except Exception as exc:  # the kernel stays up; the first cell says what happened
            self._start_error = exc
            self.log.error("gpu-workbench: no session: %s", exc)
        self.shell.extension_manager.load_extension("workbench")

    def _adopt(self, session: Any) -> None:
        """The notebook's hooks on a session: errors named by cell and line, and the
        progress of long transfers shown in the cell."""
        session.location_label = self._cell_location
        session.progress = functools.partial(NotebookProgress,
                                             show_after=workbench.settings.progress_after)

    # ------------------------------------------------------------ execution
    async def do_execute(self, code: str, silent: bool, store_history: bool = True,
                         user_expressions: dict | None = None, allow_stdin: bool = False,
                         **kwargs: Any) -> dict:
        """Run the cell as IPython does, then sync: its pending remote errors belong to it."""
        if self._start_error is not None:
            error, self._start_error = self._start_error, None
            print(f"gpu-workbench: could not open a GPU session: {error}\n"
                  "Use %gpu connect ADDRESS --token-file FILE.", file=sys.stderr)
        self._ensure_session()
        reply = await super().do_execute(code, silent, store_history, user_expressions,
                                         allow_stdin, **kwargs)
        if reply.get("status") == "ok":
            failure = self._sync_after_cell()
            if failure is not None:
                reply.update(failure)
        elif reply.get("ename") == "KeyboardInterrupt" and workbench.session is not None:
            # stopped while issuing ops (not waiting): drop what is queued as well
            try:
                workbench.session.cancel()
            except Exception as exc:  # a lost session has nothing to cancel
                self.log.debug("gpu-workbench: cancel after interrupt: %s", exc)
        return reply

    def _ensure_session(self) -> None:
        """Before a cell: a lost session is replaced (when allowed), with a note."""
        session = workbench.session
        if session is None or not (session.closed or session.heartbeat.lost):
            return
        try:
            new = workbench.require()
        except Exception as exc:
            print(f"gpu-workbench: the GPU session was lost and could not be reopened: {exc}",
                  file=sys.stderr, flush=True)
            return
        self._adopt(new)
        print(f"gpu-workbench: the GPU session was lost; opened a new one ({new.id}). "
              "Arrays from before are gone.", file=sys.stderr, flush=True)

    def _sync_after_cell(self) -> dict | None:
        session = workbench.session
        if session is None or session.closed:
            return None
        try:
            session.sync()
        except (Exception, KeyboardInterrupt) as exc:  # shown on this cell, as IPython shows errors
            # no frames: they would all be ours; the note names the op and the cell line
            self.shell.showtraceback(exc_tuple=(type(exc), exc, None))
            return {"status": "error", "ename": type(exc).__name__, "evalue": str(exc),
                    "traceback": getattr(self.shell, "_last_traceback", None) or []}
        return None

    def _cell_location(self, filename: str, line: int) -> str:
        """``line 3 of cell [5]`` for code from a cell, else ``file:line``."""
        cell = getattr(self.shell.compile, "_filename_map", {}).get(filename)
        return f"line {line} of cell [{cell}]" if cell is not None else f"{filename}:{line}"

    # ------------------------------------------------------------ shutdown
    async def do_shutdown(self, restart: bool) -> dict:
        """Close the session (and an embedded pool) before the kernel goes."""
        try:
            workbench.disconnect()
        except Exception as exc:  # shutting down regardless
            self.log.warning("gpu-workbench: closing the session failed: %s", exc)
        result = super().do_shutdown(restart)
        return await result if inspect.isawaitable(result) else result


def main() -> None:
    """``python -m workbench.kernel -f CONNECTION_FILE``: what the kernelspec runs."""
    from ipykernel.kernelapp import IPKernelApp

    IPKernelApp.launch_instance(kernel_class=RemoteGPUKernel)


if __name__ == "__main__":
    main()
