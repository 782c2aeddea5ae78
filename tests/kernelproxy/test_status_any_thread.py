"""``Session.status`` from any thread, while the session closes.

A panel's or a progress bar's thread may ask for the pool's status while the notebook's
thread closes the session. The status request used the session's own ZeroMQ context,
which the close destroys: the request then failed ("Context was terminated"), or had
its socket closed under it while it waited, which libzmq may answer by aborting the
process. It now goes through the process's context, which no session ends."""

from __future__ import annotations

import os
import threading

import kernelproxy


def test_status_answers_after_the_session_closed(pool):
    session = kernelproxy.connect(pool.address, pool.token)
    mine = session.id
    session.close()
    status = session.status()
    assert mine not in [row["session"] for row in status["sessions"]]
    assert status["devices"]


def test_status_asked_from_another_thread_while_the_session_closes(pool):
    failures: list[str] = []
    answers = 0
    for _ in range(10):
        session = kernelproxy.connect(pool.address, pool.token)
        asking = threading.Event()
        done = threading.Event()

        def ask() -> None:
            nonlocal answers
            while not done.is_set():
                try:
                    session.status()
                    answers += 1
                except Exception as exc:   # (any failure is one)
                    failures.append(repr(exc))
                asking.set()

        thread = threading.Thread(target=ask)
        thread.start()
        asking.wait(30)
        session.close()
        done.set()
        thread.join(30)
        assert not thread.is_alive()
    assert failures == []
    assert answers >= 10


def test_a_forked_child_asks_on_a_context_of_its_own(pool):
    """A child forked after the process's context was made gets a new one: the parent's
    has no I/O threads in the child, and a request on it would wait for ever."""
    session = kernelproxy.connect(pool.address, pool.token)
    try:
        session.status()                       # (the process's context made, in the parent)
        pid = os.fork()
        if pid == 0:   # the child: ask, say how it went by the exit code, leave
            code = 1
            try:
                code = 0 if session.status()["devices"] else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        session.close()
