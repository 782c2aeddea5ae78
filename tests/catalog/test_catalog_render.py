"""catalog.render: the same view as HTML (escaped, with links), rich and plain text."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from catalog import queries as q
from catalog.models import Catalog, System
from catalog.render import (ComparisonView, ExportView, SearchView, SystemsView, SystemView,
                            to_text)

from tests.catalog_fixtures import hostile_system, small_catalog


@pytest.fixture(scope="module")
def cat():
    return small_catalog()


def rich_text(view, width: int) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None)
    console.print(view)
    return console.file.getvalue()


def test_list_view_html_has_links_that_open_a_new_tab(cat):
    page = SystemsView(cat.systems)._repr_html_()
    assert page.count("<table") == 1 and page.count("<tr>") == 1 + len(cat.systems)
    assert ('<a href="https://github.com/SJTU-IPADS/reef" target="_blank" '
            'rel="noopener noreferrer">code</a>') in page
    assert "9 systems" in page


def test_list_view_text_has_every_name(cat):
    text = str(SystemsView(cat.systems))
    assert repr(SystemsView(cat.systems)) == text
    for system in cat.systems:
        assert system.key in text
    assert "\x1b[" not in text  # plain text: no escape codes


def test_list_view_drops_columns_in_narrow_terminals(cat):
    wide, narrow = rich_text(SystemsView(cat.systems), 160), rich_text(SystemsView(cat.systems), 80)
    assert "Links" in wide and "Mechanisms" in wide and "Sharing: temporal" in wide
    assert "Links" not in narrow and "Mechanisms" not in narrow
    assert all(len(line) <= 80 for line in narrow.splitlines())
    assert "virtai-orion" in narrow  # keys are never wrapped


def test_empty_list_says_so():
    view = SystemsView([])
    assert "no systems match" in str(view) and "no systems match" in view._repr_html_()


def test_detail_view_shows_every_field_and_labels_our_note(cat):
    view = SystemView(q.show("reef", catalog=cat))
    text, page = str(view), view._repr_html_()
    for label in q.FIELDS.values():
        if label != "Name":
            assert label in text and label in page
    note = "Relation to gpu-workbench (our note, not from the survey or the cited page)"
    assert note in text and f"<em>{note}</em>" in page
    assert re.search(r"Source \(seed or cited page\)\s+seed: test", text)
    assert "We do not preempt kernels." in text
    assert "paper: https://www.usenix.org/osdi22/han" in text
    assert 'href="https://doi.org/10.1/reef"' in page  # identifiers become links


def test_detail_view_link_notes_and_missing_values(cat):
    view = SystemView(q.show("virtai-orion", catalog=cat))
    assert "(in Chinese)" in str(view) and "(in Chinese)" in view._repr_html_()
    assert re.search(r"Year\s+—", str(view)) and re.search(r"Code public\s+yes", str(view))


def test_hostile_text_is_escaped_everywhere():
    evil = hostile_system()
    for view in (SystemView(evil), SystemsView([evil]),
                 SearchView("<x> [red]", [q.Hit(evil, 1.0)])):
        page = view._repr_html_()
        assert "<script>" not in page and "<b>Evil" not in page and "<i>ours" not in page
        assert 'href="https://example.org/p?a=1&amp;b=%222%22"' in page
        text = str(view)
        assert "<b>Evil</b> & [bold red]Co[/]" in text  # rich markup shown, not obeyed
    assert "[link=http://x]Lab[/link]" in str(SystemView(evil))
    assert "Search: <x> [red]" in str(SearchView("<x> [red]", []))


def test_search_view_shows_scores_best_first(cat):
    view = SearchView("gemini", q.search("gemini", catalog=cat))
    text, page = str(view), view._repr_html_()
    assert "Score" in text and text.index("gemini") < text.index("tgs")
    assert "<th" in page and ">Score</th>" in page
    assert f"{view.hits[0].score:.2f}" in text and f"{view.hits[0].score:.2f}" in page


def test_comparison_view_puts_systems_in_columns(cat):
    view = ComparisonView(q.compare(["reef", "tgs"], catalog=cat))
    text, page = str(view), view._repr_html_()
    header = next(line for line in text.splitlines() if "Field" in line)
    assert "REEF" in header and "TGS" in header
    assert "OSDI" in text and "NSDI" in text and "<table" in page
    assert '<a href="https://github.com/pkusys/TGS" target="_blank"' in page


def test_export_view_shows_the_text_verbatim(cat):
    text = q.export(cat.systems, "csv")
    view = ExportView(text, "csv", len(cat.systems))
    assert str(view) == text and "<pre>" in view._repr_html_()
    written = ExportView(text, "csv", 9, "out.csv")
    assert str(written) == "wrote 9 systems as CSV to out.csv"


def test_plain_text_has_no_trailing_blanks(cat):
    for view in (SystemsView(cat.systems), SystemView(cat.systems[0])):
        text = str(view)
        assert text == text.strip("\n")
        assert all(line == line.rstrip() for line in text.splitlines())


def test_detail_view_cites_the_public_page_of_an_entry_without_a_seed():
    url = "https://github.com/NVIDIA/cuda-checkpoint/blob/6ec728a/README.md"
    system = System.model_validate({
        "key": "cuda-checkpoint", "name": "cuda-checkpoint",
        "category": "checkpoint-swap-migration",
        "kind": "product", "mechanisms": ["checkpoint-restore", "memory-swap"],
        "source": {"kind": "repository", "url": url}})
    view = SystemView(system)
    text, page = to_text(view._renderable(300), 300), view._repr_html_()
    assert f"repository: {url}" in text and "seed:" not in text
    assert f'repository: <a href="{url}" target="_blank"' in page
    assert "Sharing: checkpoint, swap and migration" in text
    row = ComparisonView(q.compare(["cuda-checkpoint", "reef"], catalog=Catalog(
        systems=[system, *small_catalog().systems])))
    wide = to_text(row._renderable(300), 300)
    assert f"repository: {url}" in wide and "seed: test" in wide
    exported = q.export([system], "csv")
    assert exported.splitlines()[0].endswith(",identifiers,seed,source")
    assert exported.splitlines()[1].endswith(f",,repository: {url}")
