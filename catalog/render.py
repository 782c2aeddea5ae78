"""Views of query results that display well wherever they land.

The magic returns these objects instead of printing, so the frontend picks the
form: Jupyter calls ``_repr_html_`` (a table with clickable links), rich and
``python -m catalog`` call ``__rich__`` (a coloured table), and a plain REPL,
a log or a test calls ``str()``/``repr()`` (the same table as plain text).
Every piece of catalogue text goes through ``html.escape`` in HTML and through
``rich.text.Text`` (never markup parsing) in terminals, since the data holds
brackets and ampersands.
"""

from __future__ import annotations

import html
import io
import shutil
from enum import Enum
from typing import Any, Iterable, Sequence

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.panel import Panel
from rich.style import Style
from rich.table import Table
from rich.text import Text

from .models import Category, Link, Source, System
from .queries import FIELDS, Comparison, Hit, field_value, has_code

__all__ = ["CatalogView", "SystemsView", "SearchView", "SystemView", "ComparisonView",
           "ExportView", "to_text", "TEXT_WIDTH"]

#: Width of the plain-text form (``str()``); terminals use their own width.
TEXT_WIDTH = 120
_CELL = 'style="text-align:left;vertical-align:top"'
_LIST_FIELDS = ("institutions", "authors", "ideas", "results")


def to_text(renderable: RenderableType, width: int = TEXT_WIDTH) -> str:
    """Render with rich into plain text: no colours, no escape codes, no trailing blanks."""
    console = Console(file=io.StringIO(), width=width, color_system=None, force_terminal=False,
                      force_jupyter=False, force_interactive=False, highlight=False,
                      markup=False, emoji=False, legacy_windows=False)
    console.print(renderable)
    return "\n".join(line.rstrip() for line in console.file.getvalue().splitlines()).strip("\n")


class CatalogView:
    """Base of every view: subclasses give ``_renderable(width)`` and ``_html()``.

    The width lets a table drop its least useful columns in a narrow terminal
    rather than squeeze every cell to a few letters.
    """

    def _renderable(self, width: int) -> RenderableType:
        raise NotImplementedError

    def _html(self) -> str:
        raise NotImplementedError

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self._renderable(options.max_width)

    def _repr_html_(self) -> str:
        return f'<div class="gpuwb-catalog">{self._html()}</div>'

    def __str__(self) -> str:
        return to_text(self._renderable(TEXT_WIDTH))

    __repr__ = __str__

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        """Terminal IPython's display: the plain table at the terminal's own width."""
        printer.text(to_text(self._renderable(shutil.get_terminal_size((TEXT_WIDTH, 24)).columns)))


# -- formatting one value, for text and for HTML ----------------------------------------

def _code(s: System) -> str:
    return "yes" if has_code(s) else ("no" if s.code_public is False else "unknown")


def _label(value: Any) -> str:
    if isinstance(value, Category):
        return value.label
    if isinstance(value, Enum):
        return str(value.value)
    return str(value)


def _link_text(link: Link) -> str:
    return f"{link.kind.value}: {link.url}" + (f" ({link.note})" if link.note else "")


def _value_text(field: str, value: Any) -> Text:
    """One field's value as rich Text; lists one item a line, links clickable."""
    if field == "code_public":
        return Text({True: "yes", False: "no", None: "unknown"}[value])
    if value is None or value == [] or value == {}:
        return Text("—", style="dim")
    if isinstance(value, Source):
        return Text(f"{value.kind.value}: {value.url}", style=Style(link=str(value.url)))
    if field == "origin":
        return Text(f"seed: {value}")
    if field == "links":
        return Text("\n").join(Text(_link_text(link), style=Style(link=str(link.url)))
                               for link in value)
    if field == "identifiers":
        return Text("\n".join(f"{k}: {v}" for k, v in value.items()))
    if field == "mechanisms":
        return Text(", ".join(m.value for m in value))
    if isinstance(value, list):
        bullet = "• " if field in ("ideas", "results") else ""
        return Text("\n".join(bullet + _label(v) for v in value))
    return Text(_label(value))


def _a(url: str, text: str) -> str:
    return (f'<a href="{html.escape(url, quote=True)}" target="_blank" '
            f'rel="noopener noreferrer">{html.escape(text)}</a>')


_ID_URLS = {"doi": "https://doi.org/{}", "arxiv": "https://arxiv.org/abs/{}"}


def _value_html(field: str, value: Any) -> str:
    """One field's value as escaped HTML; links and known identifiers become anchors."""
    if field == "code_public":
        return {True: "yes", False: "no", None: "unknown"}[value]
    if value is None or value == [] or value == {}:
        return "—"
    if isinstance(value, Source):
        return f"{html.escape(value.kind.value)}: {_a(str(value.url), str(value.url))}"
    if field == "origin":
        return f"seed: {html.escape(str(value))}"
    if field == "links":
        return "<br>".join(
            f"{html.escape(link.kind.value)}: {_a(str(link.url), str(link.url))}"
            + (f" ({html.escape(link.note)})" if link.note else "") for link in value)
    if field == "identifiers":
        return "<br>".join(
            f"{html.escape(k)}: " + (_a(_ID_URLS[k.lower()].format(v), v)
                                     if k.lower() in _ID_URLS else html.escape(v))
            for k, v in value.items())
    if field == "mechanisms":
        return html.escape(", ".join(m.value for m in value))
    if isinstance(value, list):
        return "<br>".join(html.escape(_label(v)) for v in value)
    return html.escape(_label(value))


def _html_table(head: Sequence[str], rows: Iterable[Sequence[str]], caption: str | None,
                row_heads: bool = False) -> str:
    """An HTML table; *head* and *caption* are escaped here, cells arrive escaped."""
    parts = ["<table>"]
    if caption:
        parts.append(f"<caption>{html.escape(caption)}</caption>")
    if head:
        parts.append("<thead><tr>" + "".join(f"<th {_CELL}>{html.escape(h)}</th>" for h in head)
                     + "</tr></thead>")
    parts.append("<tbody>")
    for row in rows:
        cells = [(f"<th {_CELL}>{c}</th>" if row_heads and i == 0 else f"<td {_CELL}>{c}</td>")
                 for i, c in enumerate(row)]
        parts.append("<tr>" + "".join(cells) + "</tr>")
    parts.append("</tbody></table>")
    return "".join(parts)


# -- the views --------------------------------------------------------------------------

class SystemsView(CatalogView):
    """A list of systems, one row each (``%catalog``, ``filter``)."""

    columns = ("Key", "Name", "Year", "Venue", "Category", "Mechanisms", "Code", "Links")

    def __init__(self, systems: Iterable[System], title: str = "GPU disaggregation and sharing"):
        self.systems = list(systems)
        self.title = title

    @property
    def caption(self) -> str:
        n = len(self.systems)
        return f"{n} system{'s' if n != 1 else ''}" if n else "no systems match"

    def _extra(self, index: int) -> list[str]:
        return []  # SearchView adds the score in front

    def _extra_columns(self) -> list[str]:
        return []

    def _renderable(self, width: int) -> RenderableType:
        # Narrow terminals lose the links, then mechanisms and code; HTML always has all.
        wide, with_more, with_links = width >= 160, width >= 100, width >= 120
        table = Table(title=Text(self.title), caption=Text(self.caption), title_justify="left")
        for column in self._extra_columns():
            table.add_column(column, justify="right", no_wrap=True)
        table.add_column("Key", style="cyan", no_wrap=True)
        table.add_column("Name", style="bold", min_width=7, overflow="fold")
        table.add_column("Year", no_wrap=True)
        table.add_column("Venue", min_width=5, overflow="fold")
        table.add_column("Category", min_width=7, overflow="fold")
        if with_more:
            table.add_column("Mechanisms", min_width=10, overflow="fold")
            table.add_column("Code", no_wrap=True)
        if with_links:
            table.add_column("Links", overflow="fold")
        for i, s in enumerate(self.systems):
            row = [*(Text(x) for x in self._extra(i)), Text(s.key), Text(s.name),
                   Text(str(s.year or "—")), Text(s.venue or "—"),
                   Text(s.category.label if wide else s.category.value)]
            if with_more:
                row.append(Text("\n".join(m.value for m in s.mechanisms) or "—"))
                row.append(Text(_code(s)))
            if with_links:
                row.append(Text(" ").join(Text(link.kind.value, style=Style(
                    link=str(link.url), underline=True)) for link in s.links)
                    if s.links else Text("—", style="dim"))
            table.add_row(*row)
        return table

    def _html(self) -> str:
        rows = []
        for i, s in enumerate(self.systems):
            links = " ".join(_a(str(link.url), link.kind.value) for link in s.links) or "—"
            name = html.escape(s.name) + (f"<br><small>{html.escape(s.title)}</small>"
                                          if s.title and s.title != s.name else "")
            rows.append([*(html.escape(x) for x in self._extra(i)), html.escape(s.key), name,
                         html.escape(str(s.year or "—")), html.escape(s.venue or "—"),
                         html.escape(s.category.label), _value_html("mechanisms", s.mechanisms),
                         _code(s), links])
        return _html_table([*self._extra_columns(), *self.columns], rows,
                           f"{self.title} ({self.caption})")


class SearchView(SystemsView):
    """Search results with their scores, best first (``search``)."""

    def __init__(self, query: str, hits: Iterable[Hit]):
        self.query = query
        self.hits = list(hits)
        super().__init__([h.system for h in self.hits], title=f"Search: {query}")

    def _extra_columns(self) -> list[str]:
        return ["Score"]

    def _extra(self, index: int) -> list[str]:
        return [f"{self.hits[index].score:.2f}"]


class SystemView(CatalogView):
    """One system in full (``show``); our note on gpu-workbench is labelled as ours."""

    def __init__(self, system: System):
        self.system = system

    def _renderable(self, width: int) -> RenderableType:
        s = self.system
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold", no_wrap=True)
        grid.add_column(overflow="fold")
        for field, label in FIELDS.items():
            if field not in ("name", "relation"):
                grid.add_row(Text(label), _value_text(field, field_value(s, field)))
        note = Panel(_value_text("relation", s.relation), title=FIELDS["relation"],
                     title_align="left", border_style="yellow")
        return Panel(Group(grid, note), title=Text(s.name, style="bold"), title_align="left")

    def _html(self) -> str:
        s = self.system
        # the relation row is our words, not the survey's: its label says so, in italics
        rows = [[(f"<em>{html.escape(label)}</em>" if field == "relation" else html.escape(label)),
                 _value_html(field, field_value(s, field))]
                for field, label in FIELDS.items() if field != "name"]
        return _html_table([], rows, s.name, row_heads=True)


class ComparisonView(CatalogView):
    """Systems side by side, one row per field (``compare``)."""

    def __init__(self, comparison: Comparison):
        self.comparison = comparison

    @property
    def systems(self) -> tuple[System, ...]:
        return self.comparison.systems

    def _renderable(self, width: int) -> RenderableType:
        table = Table(title="Comparison", title_justify="left", show_lines=True)
        table.add_column("Field", style="bold", max_width=24)
        for s in self.systems:
            table.add_column(Text(s.name), overflow="fold")
        for field, values in self.comparison.rows.items():
            if field != "name":
                table.add_row(Text(FIELDS.get(field, field)),
                              *(_value_text(field, v) for v in values))
        return table

    def _html(self) -> str:
        rows = [[html.escape(FIELDS.get(field, field)), *(_value_html(field, v) for v in values)]
                for field, values in self.comparison.rows.items() if field != "name"]
        return _html_table(["Field", *(s.name for s in self.systems)], rows, "Comparison",
                           row_heads=True)


class ExportView(CatalogView):
    """Exported text (``export``): the text itself, or a note of the file it went to."""

    def __init__(self, text: str, format: str, count: int, path: str | None = None):
        self.text, self.format, self.count, self.path = text, format, count, path

    @property
    def message(self) -> str:
        return (f"wrote {self.count} system{'s' if self.count != 1 else ''} as "
                f"{self.format.upper()} to {self.path}")

    def _renderable(self, width: int) -> RenderableType:
        return Text(self.message if self.path else self.text)

    def __str__(self) -> str:  # the text verbatim, not wrapped at the console width
        return self.message if self.path else self.text

    __repr__ = __str__

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        printer.text(str(self))

    def _html(self) -> str:
        if self.path:
            return f"<p>{html.escape(self.message)}</p>"
        return f"<pre>{html.escape(self.text)}</pre>"
