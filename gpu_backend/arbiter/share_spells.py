"""``share``'s spells of work (arbiter/share.py takes them from :class:`Spells`): which
sessions keep their work backlogged, *deep*, for the arbiter's ``deep_company``
(arbiter/service.py, DEEP_COMPANY). Split from share.py, whose sessions these methods read;
they are ``SharePolicy``'s own, kept here by topic.

A session's spell begins at its ``want`` (or a release of its grant wanting more after an
``idle``), and ends at its ``idle``, a release out of work or its detach. A loop that keeps
its session backlogged never ends one; a loop that waits for its values ends one at each
read. A worker told it was alone says no ``idle`` at its reads (worker/lease.py), so its
spell is counted again from the moment it has company (:meth:`Spells.company_began`).
"""

from __future__ import annotations

__all__ = ["Spells", "DEEP_SPELL"]

#: How long a session must have had work without a break to be *deep* (:meth:`Spells.deep`):
#: a loop that keeps its session backlogged (a GEMM loop reading the fence before last) never
#: runs out, where the loops that wait for a value run out at each read (their worker's
#: ``idle``), every 5-25 ms in every scenario measured (four 4096² GEMMs, the trainer's step,
#: an 8192² GEMM and its read beside another user); a tenth of a second leaves them room
#: several times over. (A loop whose batches run longer, a 100 ms training step read at its
#: end, counts as deep in each batch's last part: its own replays stay paced, their next
#: message never waiting, and the others' run whole beside it.)
DEEP_SPELL = 0.1


class Spells:
    """See the module's docstring. Mixed into ``SharePolicy``, which sets ``_spells`` (an
    empty dict: per session with work, when its present spell began) as it starts."""

    def _spell_goes_on(self, sid: str) -> None:
        """*sid* has work: its spell goes on, or begins now."""
        self._spells.setdefault(sid, self.clock())

    def _spell_ends(self, sid: str) -> None:
        """*sid* said it is out of work (``idle``, a release out of work) or left."""
        self._spells.pop(sid, None)

    def company_began(self, sid: str) -> None:
        """*sid*'s worker, alone till now, said no ``idle`` at its reads (worker/lease.py):
        its spell, if it has one, is counted from now, so that a loop that waits for its
        values is not taken for deep until its first read in company."""
        if sid in self._spells:
            self._spells[sid] = self.clock()

    def deep(self, sid: str) -> bool:
        """Whether the session *sid* has had work without a break for DEEP_SPELL: it wanted
        the device that long ago and has not said ``idle`` (nor released it out of work)
        since. A loop that keeps its session backlogged never does; a loop that waits for
        its values does at each read, and a session that says ``idle`` is shallow from that
        message on, with its launched work still running (its tail). Judged by the session,
        not its user: a user's notebook that reads every few ms beside its own backlogged
        loop is not deep. The arbiter's ``deep_company`` lets a deep session launch its long
        replays whole beside company as deep as itself (arbiter/service.py, DEEP_COMPANY)."""
        since = self._spells.get(sid)
        session = self.sessions.get(sid)
        return since is not None and session is not None and session.runnable \
            and self.clock() - since >= DEEP_SPELL
