"""Run 154's diagnostic (not part of the project): patches a tree copy so that
- the worker logs every reply's ``sendmsg`` (its start, duration, bytes, and the CPU it ran on
  before and after: ``sched_getcpu``) to $GPUWB_DIAG_DIR/send-PID.txt,
- the client logs every message it reads (its time and CPU) to $GPUWB_DIAG_DIR/recv-PID.txt,
- a worker pins itself to the CPU $GPUWB_DIAG_PIN names, where it is set.
Run 151 measured the worker's ``sendmsg`` at 145 µs a call in logistic regression (3 µs in the
hot sync); the VM shows 342 µs median for 62-byte non-blocking sends. Hypothesis: the client,
woken by a reply (a sync wake-up), is put on the worker's CPU and the two then share it.
    python sched_patch.py TREE"""
import sys

tree = sys.argv[1]
LOGGER = '''
import ctypes as _ct, os as _os, time as _time
_libc = _ct.CDLL(None)
_cpu = _libc.sched_getcpu
_LOG = []
def _flush(kind):
    d = _os.environ.get("GPUWB_DIAG_DIR")
    if d and _LOG:
        with open(f"{d}/{kind}-{_os.getpid()}.txt", "a") as f:
            f.write("".join(" ".join(str(v) for v in row) + "\\n" for row in _LOG))
    _LOG.clear()
'''

p = f"{tree}/gpu_backend/worker/unix_listener.py"
s = open(p).read()
old = "                consume(views, peer.sock.sendmsg(views[:IOV_MAX], ancillary, socket.MSG_DONTWAIT))\n"
assert old in s
s = s.replace(old, '''                _c0 = _cpu(); _t0 = _time.perf_counter()
                _n = peer.sock.sendmsg(views[:IOV_MAX], ancillary, socket.MSG_DONTWAIT)
                _t1 = _time.perf_counter()
                _LOG.append((f"{_t0:.7f}", f"{(_t1 - _t0) * 1e6:.1f}", _n, _c0, _cpu()))
                if len(_LOG) >= 100:
                    _flush("send")
                consume(views, _n)
''')
s = s.replace("from collections import deque\n", "from collections import deque\n" + LOGGER, 1)
open(p, "w").write(s)

p = f"{tree}/kernelproxy/links.py"
s = open(p).read()
old = '''    def recv(self) -> list:
        try:
            return self._reader.read_message()
'''
assert old in s
s = s.replace(old, '''    def recv(self) -> list:
        try:
            _m = self._reader.read_message()
            _LOG.append((f"{_time.perf_counter():.7f}", _cpu()))
            if len(_LOG) >= 100:
                _flush("recv")
            return _m
''')
s = s.replace("from typing import Any, Callable, NoReturn, Sequence\n",
              "from typing import Any, Callable, NoReturn, Sequence\n" + LOGGER, 1)
open(p, "w").write(s)

p = f"{tree}/gpu_backend/worker/entry.py"
s = open(p).read()
old = "def main(argv: list[str] | None = None) -> int:\n"
assert old in s
s = s.replace(old, old + '''    if os.environ.get("GPUWB_DIAG_PIN"):
        os.sched_setaffinity(0, {int(os.environ["GPUWB_DIAG_PIN"])})
''')
open(p, "w").write(s)
print("patched", tree)
