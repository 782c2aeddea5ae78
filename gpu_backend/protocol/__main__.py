"""``python -m gpu_backend.protocol [--write docs/protocol.md]``: print the messages'
field tables, or rewrite the section of the page that holds them (between its markers)."""

from __future__ import annotations

import sys

from .message_docs import render_markdown, write_section


def main(argv: list[str]) -> int:
    if argv[:1] == ["--write"] and len(argv) == 2:
        print(f"{argv[1]}: {'rewritten' if write_section(argv[1]) else 'unchanged'}")
    elif not argv:
        print(render_markdown())
    else:
        print("usage: python -m gpu_backend.protocol [--write docs/protocol.md]", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
