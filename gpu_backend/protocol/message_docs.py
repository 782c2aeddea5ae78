"""docs/protocol.md's field tables, rendered from the message classes of
:mod:`gpu_backend.protocol.messages` (``python -m gpu_backend.protocol --write
docs/protocol.md``; tests/gpu_backend/test_wire_schema.py holds the page to them)."""

from __future__ import annotations

import types
import typing
from typing import Any, Literal

from .messages import CHANNELS, MESSAGES, fields_of

__all__ = ["MARK_BEGIN", "MARK_END", "render_markdown", "write_section"]

#: the page's generated section lies between these lines
MARK_BEGIN = "<!-- messages:begin -->"
MARK_END = "<!-- messages:end -->"


def _type_text(tp: Any) -> str:
    """A field's type as the tables show it: msgpack's view of Python's types."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is type(None):
        return "None"
    if tp is Any:
        return "any"
    if origin is Literal:
        return " or ".join(repr(a).replace("'", '"') for a in args)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_text(a) for a in args)
    if origin is not None:
        return f"{origin.__name__}[{', '.join(_type_text(a) for a in args)}]"
    return getattr(tp, "__name__", str(tp))


def _cell(text: str) -> str:
    """*text* on one line of a table or paragraph: reST's roles and literals made Markdown's."""
    text = " ".join(text.split()).replace(":class:`", "`").replace("``", "`")
    return text.replace("|", "\\|")


def render_markdown() -> str:
    """docs/protocol.md's section between MARK_BEGIN and MARK_END: per channel, per message,
    its docstring and a table of its fields."""
    out: list[str] = []
    for channel, classes in MESSAGES.items():
        out += [f"### {channel[0].upper()}{channel[1:]}", "", CHANNELS[channel], ""]
        for cls in classes:
            out += [f"#### `{cls.__name__}`", "", _cell(cls.__doc__ or ""), "",
                    "| field | type | meaning |", "| --- | --- | --- |"]
            for name, (tp, meaning, required) in fields_of(cls).items():
                shown = f"`{name}`" if required else f"`{name}` (optional)"
                out.append(f"| {shown} | `{_type_text(tp)}` | {_cell(meaning)} |")
            out.append("")
    return "\n".join(out)


def write_section(path: str) -> bool:
    """Put render_markdown() between the markers of *path*; whether the file changed."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    head, begin, rest = text.partition(MARK_BEGIN)
    _old, end, tail = rest.partition(MARK_END)
    if not begin or not end:
        raise SystemExit(f"{path}: no {MARK_BEGIN} … {MARK_END} section")
    new = f"{head}{MARK_BEGIN}\n{render_markdown()}\n{MARK_END}{tail}"
    if new != text:
        with open(path, "w", encoding="utf-8") as f:
            f.write(new)
    return new != text

