"""The command grammar that ``python -m catalog`` and ``%catalog`` share.

:func:`add_arguments` puts the subcommands and their options on any
``ArgumentParser``: the CLI's own (:func:`build_parser`) and the magic's
``MagicArgumentParser``, which raises ``UsageError`` instead of exiting. So an
option is defined once, and ``%catalog?`` and ``python -m catalog -h`` show the
same usage. :func:`run` turns parsed arguments into a view from
:mod:`catalog.render`; callers decide how to show it.
"""

from __future__ import annotations

import argparse
import difflib
import textwrap
from pathlib import Path

from . import queries
from .models import Catalog, Category, Kind, Mechanism
from .render import CatalogView, ComparisonView, ExportView, SearchView, SystemsView, SystemView

__all__ = ["COMMANDS", "add_arguments", "build_parser", "check_command", "run"]

COMMANDS = ("list", "search", "show", "compare", "filter", "export")
_FILTERS = ("category", "area", "kind", "mechanism", "venue", "since", "until", "code")


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Keeps hyphenated values ('api-interception') whole when wrapping option help."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


def _add_filter_options(p: argparse.ArgumentParser) -> None:
    """The filter options, which ``filter`` and ``export`` both take."""
    g = p.add_argument_group("filters (all given must match)")
    g.add_argument("--category", metavar="C",
                   help="one of: " + ", ".join(c.value for c in Category))
    g.add_argument("--area", metavar="A", help="one of: " + ", ".join(queries.AREAS))
    g.add_argument("--kind", metavar="K", help="one of: " + ", ".join(k.value for k in Kind))
    g.add_argument("--mechanism", metavar="M", action="append",
                   help="repeat for several, all must be listed: "
                        + ", ".join(m.value for m in Mechanism))
    g.add_argument("--venue", metavar="V", help="e.g. OSDI (case-insensitive)")
    g.add_argument("--since", metavar="YEAR", type=int, help="published in YEAR or later")
    g.add_argument("--until", metavar="YEAR", type=int, help="published in YEAR or earlier")
    g.add_argument("--code", action=argparse.BooleanOptionalAction, default=None,
                   help="only systems with (--code) or without (--no-code) public code")


def add_arguments(parser: argparse.ArgumentParser, *,
                  parser_class: type | None = None) -> dict[str, argparse.ArgumentParser]:
    """Add the subcommands to *parser*; return them by name.

    *parser_class* makes the subcommand parsers (default: the class of
    *parser*, so the magic's raise ``UsageError`` too). The epilog summarises
    every command's usage, so that the one help page (``%catalog?``) shows all.
    """
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands",
                                parser_class=parser_class or type(parser))

    def command(name: str, summary: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=summary, description=summary, formatter_class=_Formatter,
                              add_help=True)

    p = command("list", "every system as a table (the default command)")
    p.add_argument("--sort", default="year", choices=list(queries.SORT_KEYS),
                   help="order of the rows (default: year)")
    p = command("search", "systems matching the words, most relevant first")
    p.add_argument("text", nargs="+", metavar="TEXT",
                   help="words to find in names, titles, ideas, institutions, mechanisms, "
                        "venues (case- and accent-insensitive)")
    p.add_argument("--limit", type=int, metavar="N", help="show the best N only")
    p = command("show", "one system in full")
    p.add_argument("name", nargs="+", metavar="NAME", help="a key (e.g. reef) or a name")
    p = command("compare", "systems side by side")
    p.add_argument("names", nargs="+", metavar="NAME", help="two or more keys or names")
    p = command("filter", "systems matching every filter given")
    _add_filter_options(p)
    p.add_argument("--sort", default="year", choices=list(queries.SORT_KEYS),
                   help="order of the rows (default: year)")
    p = command("export", "systems as JSON or CSV (all, or those the filters keep)")
    p.add_argument("--format", default="json", choices=list(queries.EXPORT_FORMATS),
                   help="json (the data file's shape) or csv (default: json)")
    p.add_argument("--output", metavar="FILE", help="write to FILE instead of showing it")
    _add_filter_options(p)

    commands = dict(sub.choices)
    lines = []
    for name in COMMANDS:
        # drop "usage: " and keep argparse's continuation lines aligned under the command
        first, *rest = commands[name].format_usage().removeprefix("usage: ").rstrip().split("\n")
        lines.append("  " + first)
        lines.extend(line[len("usage: ") - 2:] for line in rest)
    parser.epilog = ("usage of each command (COMMAND -h for details):\n" + "\n".join(lines)
                     + "\n\nWith no command: the list of every system.")
    return commands


def build_parser(prog: str = "python -m catalog") -> argparse.ArgumentParser:
    """The command line's parser (argparse's own errors: message and exit status 2)."""
    parser = argparse.ArgumentParser(
        prog=prog, formatter_class=_Formatter,
        description="Browse the catalogue of GPU disaggregation and sharing systems.")
    add_arguments(parser)
    return parser


def check_command(argv: list[str], catalog: Catalog | None = None) -> None:
    """Reject an unknown first word with a hint, before argparse's terser 'invalid choice'.

    A system's name in that place most likely meant ``show NAME``.
    """
    if not argv or argv[0].startswith("-") or argv[0] in COMMANDS:
        return
    word = argv[0]
    try:
        queries.show(word, catalog=catalog)
        hint = f"; did you mean 'show {word}'?"
    except queries.CatalogError:
        close = difflib.get_close_matches(word, COMMANDS, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
    raise queries.CatalogError(f"unknown command {word!r}{hint} Commands: "
                               + ", ".join(COMMANDS))


def _filters(args: argparse.Namespace) -> dict:
    return {name: getattr(args, name, None) for name in _FILTERS}


def _describe(filters: dict) -> str:
    given = []
    for name, value in filters.items():
        if name == "code" and value is not None:
            given.append("with code" if value else "without code")
        elif isinstance(value, list):
            given.extend(f"{name}={v}" for v in value)
        elif value is not None:
            given.append(f"{name}={value}")
    return ", ".join(given) or "no filters"


def run(args: argparse.Namespace, catalog: Catalog | None = None) -> CatalogView:
    """Carry out parsed arguments; bad values raise :class:`queries.CatalogError`."""
    command = getattr(args, "command", None) or "list"
    if command == "list":
        return SystemsView(queries.list_systems(getattr(args, "sort", "year"), catalog=catalog))
    if command == "search":
        text = " ".join(args.text)
        return SearchView(text, queries.search(text, limit=args.limit, catalog=catalog))
    if command == "show":
        return SystemView(queries.show(" ".join(args.name), catalog=catalog))
    if command == "compare":
        return ComparisonView(queries.compare(args.names, catalog=catalog))
    filters = _filters(args)
    if command == "filter":
        systems = queries.filter_systems(**filters, sort=args.sort, catalog=catalog)
        return SystemsView(systems, title=f"Filter: {_describe(filters)}")
    if command == "export":
        systems = queries.filter_systems(**filters, sort="key", catalog=catalog)
        text = queries.export(systems, args.format)
        if args.output:
            try:
                Path(args.output).expanduser().write_text(text, encoding="utf-8")
            except OSError as exc:
                raise queries.CatalogError(f"cannot write {args.output}: {exc.strerror}") from exc
        return ExportView(text, args.format, len(systems), args.output)
    raise queries.CatalogError(f"unknown command {command!r}; choose from: "
                               + ", ".join(COMMANDS))
