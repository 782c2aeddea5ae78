"""The parser of a line magic's subcommands (``%catalog show``, ``%gpu connect``).

IPython's ``magic_arguments`` builds a magic's parser from argparse; its errors there are
argparse's bare text. A subcommand's parser made from this class names the subcommand and
shows its usage line in the ``UsageError`` the notebook prints. ``%catalog`` and ``%gpu``
(in ``workbench``, which may import ``catalog``; this module loads nothing of the
catalogue's data) both use it.
"""

from __future__ import annotations

from IPython.core.error import UsageError
from IPython.core.magic_arguments import MagicArgumentParser

__all__ = ["CommandParser"]


class CommandParser(MagicArgumentParser):
    """A subcommand's parser: its errors name the subcommand and show its usage."""

    def error(self, message: str):
        raise UsageError(f"{self.prog}: {message}\n{self.format_usage().rstrip()}")
