"""Small views that show well wherever they land: the ``%gpu`` magics return these.

A view is data plus three renderings: ``__rich__`` for terminals and rich,
``_repr_html_`` for notebooks (every value through ``html.escape``) and
``str()`` for a plain REPL, a log or a test (rich's plain-text export). Values
go through ``rich.text.Text``, never markup parsing, so brackets in a device
name or a path show as themselves.

    KeyValueView("Memory", [("used", human_bytes(n)), ...])   a two-column panel
    TableView("Sessions", ["Session", "User"], rows, marked={0})  a table, row 0 in bold
    TableView(..., narrow=TableView(...))   fewer, shorter columns where all do not fit
    GroupView("Pool status", [panel, table, ...])              several views, one after another

Each keeps its raw figures in ``.data`` (a dict) for code that wants numbers.
"""

from __future__ import annotations

import html
import io
import shutil
from typing import Any, Iterable, Sequence

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

__all__ = ["View", "KeyValueView", "TableView", "GroupView", "human_bytes", "human_duration",
           "to_text", "natural_width", "TEXT_WIDTH"]

#: Width of the plain-text form (``str()``); a terminal IPython uses its own width.
TEXT_WIDTH = 110
_CELL = 'style="text-align:left;vertical-align:top"'
_NUM = 'style="text-align:right;vertical-align:top"'
DASH = "—"


# -- figures a person reads ------------------------------------------------------------

def human_bytes(n: int | float | None) -> str:
    """``1536`` → ``1.5 KiB``; binary units up to TiB; ``None`` → ``—``."""
    if n is None:
        return DASH
    n = float(n)
    sign = "-" if n < 0 else ""
    n = abs(n)
    if n < 1024:
        return f"{sign}{int(n)} B"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        n /= 1024
        if n < 1024 or unit == "TiB":
            return f"{sign}{n:.1f} {unit}" if n < 100 else f"{sign}{n:.0f} {unit}"
    raise AssertionError("unreachable")


def human_duration(seconds: float | None) -> str:
    """``0.000012`` → ``12.0 µs``, ``0.25`` → ``250 ms``, ``75`` → ``1 min 15 s``; ``None`` → ``—``."""
    if seconds is None:
        return DASH
    s = float(seconds)
    if s < 0:
        return "-" + human_duration(-s)
    if s == 0:
        return "0 s"
    if s < 1e-3:
        return f"{s * 1e6:.1f} µs"
    if s < 1:
        return f"{s * 1e3:.3g} ms"
    if s < 60:
        return f"{s:.3g} s"
    minutes, secs = divmod(int(round(s)), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes} min"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h"


def to_text(renderable: RenderableType, width: int = TEXT_WIDTH) -> str:
    """Plain text of a rich renderable: no colours or escape codes, no trailing blanks."""
    console = Console(record=True, file=io.StringIO(), width=width, color_system=None,
                      force_terminal=False, force_jupyter=False, force_interactive=False,
                      highlight=False, markup=False, emoji=False, legacy_windows=False)
    console.print(renderable)
    text = console.export_text(styles=False)
    return "\n".join(line.rstrip() for line in text.splitlines()).strip("\n")


#: A width no table here reaches: measuring at it gives a table's natural width.
_UNBOUNDED = 100_000


def natural_width(renderable: RenderableType, console: Console | None = None) -> int:
    """The width *renderable* takes when nothing in it has to wrap (``gpuwb status --wide``
    sizes its output to it)."""
    console = console or Console(file=io.StringIO(), width=TEXT_WIDTH)
    return Measurement.get(console, console.options.update_width(_UNBOUNDED), renderable).maximum


class _WideOrNarrow:
    """A table with every column where the width allows all of them on one line per cell,
    else its narrow form. Chosen when rich renders it, at the width it has then (the
    terminal's; 80 when the output is piped; a notebook's text width), so a table never has
    its headers broken letter by letter to fit columns that cannot fit."""

    def __init__(self, wide: RenderableType, narrow: RenderableType) -> None:
        self.wide, self.narrow = wide, narrow

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.wide if natural_width(self.wide, console) <= options.max_width else self.narrow

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(Measurement.get(console, options, self.narrow).minimum,
                           Measurement.get(console, options, self.wide).maximum)


def _text(value: Any) -> Text:
    return value if isinstance(value, Text) else Text(DASH if value is None else str(value))


# -- the views ---------------------------------------------------------------------------

class View:
    """Base: subclasses give ``_renderable()`` and ``_html()``; the rest follows."""

    title: str = ""
    data: dict

    def _renderable(self) -> RenderableType:
        raise NotImplementedError

    def _html(self) -> str:
        raise NotImplementedError

    def __rich__(self) -> RenderableType:
        return self._renderable()

    def _repr_html_(self) -> str:
        return f'<div class="gpuwb-view">{self._html()}</div>'

    def __str__(self) -> str:
        return to_text(self._renderable())

    def __repr__(self) -> str:
        return str(self)

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        """Terminal IPython: the plain text, at the terminal's own width."""
        width = shutil.get_terminal_size((TEXT_WIDTH, 24)).columns
        printer.text(to_text(self._renderable(), width=max(40, width)))


class KeyValueView(View):
    """A titled panel of ``label: value`` lines (values already formatted for people)."""

    def __init__(self, title: str, rows: Iterable[tuple[str, Any]], *, note: str | None = None,
                 data: dict | None = None) -> None:
        self.title = title
        self.rows = [(str(k), DASH if v is None else str(v)) for k, v in rows]
        self.note = note
        self.data = dict(data or {})

    def __getitem__(self, label: str) -> str:
        """The shown value of *label* (``view["free"]``)."""
        for key, value in self.rows:
            if key == label:
                return value
        raise KeyError(label)

    def _renderable(self) -> RenderableType:
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold", no_wrap=True)
        grid.add_column(overflow="fold")
        for key, value in self.rows:
            grid.add_row(Text(key), Text(value))
        body: RenderableType = grid if self.note is None else Group(grid, Text(self.note, style="dim"))
        return Panel(body, title=Text(self.title, style="bold"), title_align="left", expand=False)

    def _html(self) -> str:
        rows = "".join(f"<tr><th {_CELL}>{html.escape(k)}</th><td {_CELL}>{html.escape(v)}</td></tr>"
                       for k, v in self.rows)
        note = f"<p><small>{html.escape(self.note)}</small></p>" if self.note else ""
        return (f"<table><caption style=\"text-align:left\"><b>{html.escape(self.title)}</b></caption>"
                f"<tbody>{rows}</tbody></table>{note}")


class TableView(View):
    """A titled table; rows whose index is in *marked* are shown in bold.

    Columns named in *numeric* are right-aligned and, like those in *no_wrap*,
    never wrapped in text. Cells are shown as ``str()`` of the value (``None``
    as a dash). *narrow*, a table of fewer or shorter columns, is shown instead in
    text too narrow for this one (80 columns, a pipe); notebooks' HTML always shows
    this one.
    """

    def __init__(self, title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]], *,
                 marked: Iterable[int] = (), numeric: Iterable[str] = (),
                 no_wrap: Iterable[str] = (), caption: str | None = None, empty: str = "none",
                 data: dict | None = None, narrow: "TableView | None" = None) -> None:
        self.title = title
        self.columns = [str(c) for c in columns]
        self.rows = [[DASH if c is None else str(c) for c in row] for row in rows]
        self.marked = set(marked)
        self.numeric = set(numeric)
        self.no_wrap = set(no_wrap) | self.numeric
        self.caption = caption
        self.empty = empty
        self.data = dict(data or {})
        self.narrow = narrow

    def _renderable(self) -> RenderableType:
        if self.narrow is None:
            return self._table()
        return _WideOrNarrow(self._table(), self.narrow._table())

    def _table(self) -> RenderableType:
        table = Table(title=Text(self.title, style="bold"), title_justify="left",
                      caption=Text(self.caption) if self.caption else None, caption_justify="left")
        for column in self.columns:
            table.add_column(Text(column), justify="right" if column in self.numeric else "left",
                             overflow="fold", no_wrap=column in self.no_wrap)
        for i, row in enumerate(self.rows):
            table.add_row(*(Text(c) for c in row), style="bold" if i in self.marked else None)
        if not self.rows:
            return Group(table, Text(f"  ({self.empty})", style="dim"))
        return table

    def _html(self) -> str:
        head = "".join(f"<th {_NUM if c in self.numeric else _CELL}>{html.escape(c)}</th>"
                       for c in self.columns)
        body = []
        for i, row in enumerate(self.rows):
            cells = "".join(f"<td {_NUM if c in self.numeric else _CELL}>{html.escape(v)}</td>"
                            for c, v in zip(self.columns, row))
            mark = ' class="gpuwb-marked" style="font-weight:bold"' if i in self.marked else ""
            body.append(f"<tr{mark}>{cells}</tr>")
        if not self.rows:
            body.append(f'<tr><td colspan="{max(1, len(self.columns))}" {_CELL}>'
                        f"<i>{html.escape(self.empty)}</i></td></tr>")
        caption = html.escape(self.title) + (f" — {html.escape(self.caption)}" if self.caption else "")
        return (f"<table><caption style=\"text-align:left\"><b>{caption}</b></caption>"
                f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")


class GroupView(View):
    """Several views under one title, one after another (``%gpu status``)."""

    def __init__(self, title: str, parts: Iterable[View], *, data: dict | None = None) -> None:
        self.title = title
        self.parts = list(parts)
        self.data = dict(data or {})

    def _renderable(self) -> RenderableType:
        return Group(Text(self.title, style="bold underline"), *(p._renderable() for p in self.parts))

    def _html(self) -> str:
        return (f"<h4>{html.escape(self.title)}</h4>"
                + "".join(f'<div style="margin-bottom:0.8em">{p._html()}</div>' for p in self.parts))
