"""Import each named module alone: ``python tests/import_alone.py NAME...`` prints a JSON
list of "name: error" for those that fail.

A fresh interpreter per module cost ~0.15 s each, most of it NumPy, ZeroMQ, pydantic and
Jupyter loading again (the whole check took ~35 s of a test run's 2-core budget). Here one
process loads those third-party libraries once, then forks a child per module: the child
starts with none of this project's modules loaded, so a module that works only after
another of ours was imported first still fails, as in a fresh interpreter.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import sys
import tempfile
import traceback

#: Third-party libraries our modules import, loaded once before the forks (those missing
#: are skipped: the module that needs one then says so itself).
PRELOAD = ("numpy", "scipy", "zmq", "msgpack", "pydantic", "pydantic_settings", "rich",
           "IPython", "ipykernel.ipkernel", "jupyter_client", "nbformat", "nbclient",
           "jupyter_server.base.handlers", "tornado.web", "traitlets", "matplotlib")
OURS = ("gpu_backend", "kernelproxy", "workbench", "catalog")


def main(names: list[str]) -> int:
    for library in PRELOAD:
        try:
            importlib.import_module(library)
        except ImportError:
            pass
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in OURS)
    if loaded:   # a library pulled one of ours in: the check would no longer be alone
        print(json.dumps([f"preloading loaded {loaded}"]))
        return 1
    # Each child compiles the modules it imports; one child's bytecode serves the next (a
    # cache of our own, in a temporary folder, whatever PYTHONDONTWRITEBYTECODE says): the
    # same imports, done without compiling the same sources again in every child.
    cache = tempfile.mkdtemp(prefix="gpuwb-import-alone-")
    sys.pycache_prefix, sys.dont_write_bytecode = cache, False
    try:
        failed = _import_each(names)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    print(json.dumps(failed))
    return 0


def _import_each(names: list[str]) -> list[str]:
    """Import each of *names* in a child forked from this process; "name: error" for
    those that fail."""
    failed = []
    for name in names:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:   # the child: import, say why not, leave without cleanup
            os.close(read)
            try:
                importlib.import_module(name)
                code = 0
            except BaseException:
                os.write(write, traceback.format_exc().strip().splitlines()[-1].encode())
                code = 1
            os._exit(code)
        os.close(write)
        with os.fdopen(read, "rb") as pipe:
            why = pipe.read().decode(errors="replace")
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            failed.append(f"{name}: {why or 'exit status ' + str(status)}")
    return failed


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
