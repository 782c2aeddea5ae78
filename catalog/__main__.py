"""``python -m catalog``: the catalogue from a terminal, with the magic's grammar.

Tables go through rich (colours and clickable links where the terminal has
them); ``export`` writes its JSON or CSV verbatim so it can be piped. Bad
input exits with status 2 and a one-line message, like argparse's own errors.
"""

from __future__ import annotations

import os
import sys

from rich.console import Console

from .cli import build_parser, check_command, run
from .queries import CatalogError
from .render import ExportView


def main(argv: list[str] | None = None, prog: str = "python -m catalog") -> int:
    """Run one catalogue command; ``gpuwb catalog`` calls this with its own *prog*."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(prog)
    try:
        check_command(argv)
    except CatalogError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)  # exits 2 itself on a malformed command line
    try:
        view = run(args)
    except CatalogError as exc:
        print(f"{parser.prog} {args.command or 'list'}: error: {exc}", file=sys.stderr)
        return 2
    try:
        if isinstance(view, ExportView) and not view.path:
            sys.stdout.write(view.text)
            sys.stdout.flush()
        else:
            Console().print(view)
    except BrokenPipeError:  # 'python -m catalog export | head': the reader left, not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
