"""The ``%catalog`` line magic (``%load_ext catalog``).

The magic parses its line with the grammar of :mod:`catalog.cli` (the same
options as ``python -m catalog``), built through IPython's ``magic_arguments``
so that ``%catalog?`` shows the usage. It returns a view from
:mod:`catalog.render` rather than printing: Jupyter shows it as an HTML table,
a terminal IPython as text, and the value can be kept (``v = %catalog``).
Every mistake a person can make raises ``UsageError``, which IPython shows as
one line instead of a traceback.
"""

from __future__ import annotations

import argparse
import shlex

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import ArgDecorator, magic_arguments

from . import cli
from .magic_parser import CommandParser
from .queries import CatalogError
from .render import CatalogView

__all__ = ["CatalogMagics"]


class _shared_grammar(ArgDecorator):
    """Put :func:`catalog.cli.add_arguments` on the magic's parser (no second copy)."""

    def add_to_parser(self, parser, group):
        parser.prog = "%catalog"  # the subcommands' usage lines read '%catalog show ...'
        cli.add_arguments(parser, parser_class=CommandParser)
        parser.prog = "catalog"   # the top usage line gets its '%' from IPython's formatter
        return None


@magics_class
class CatalogMagics(Magics):
    """Magics of the research catalogue."""

    @line_magic
    @magic_arguments()
    @_shared_grammar()
    def catalog(self, line: str = ""):
        """Browse the catalogue of GPU disaggregation and sharing systems.

        Examples::

            %catalog
            %catalog search preemption
            %catalog show reef
            %catalog compare reef tgs gemini
            %catalog filter --category temporal-sharing --code
            %catalog export --format csv --output systems.csv

        Returns a view: an HTML table in Jupyter, a text table in a terminal.
        """
        try:
            argv = shlex.split(line)
        except ValueError as exc:  # an unclosed quote
            raise UsageError(f"%catalog: cannot split the line: {exc}") from None
        try:
            cli.check_command(argv)
        except CatalogError as exc:
            raise UsageError(f"%catalog: {exc}") from None
        try:
            args = self.catalog.parser.parse_args(argv)
        except SystemExit:  # 'COMMAND -h' printed its help and asked to exit
            return None
        except UsageError as exc:  # the top parser's errors do not say whose they are
            message = str(exc)
            raise UsageError(message if message.startswith("%catalog")
                             else f"%catalog: {message}") from None
        return _run(args)


def _run(args: argparse.Namespace) -> CatalogView:
    try:
        return cli.run(args)
    except CatalogError as exc:
        command = args.command or "list"
        raise UsageError(f"%catalog {command}: {exc}") from None
