"""catalog.queries: every query on a hand-built catalogue, then on the shipped data."""

from __future__ import annotations

import csv
import io
import re
import sys

import pytest

import catalog
from catalog import queries as q
from catalog.models import Catalog, Category, Kind, Mechanism

from tests.catalog_fixtures import small_catalog


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return small_catalog()


def keys(systems) -> list[str]:
    return [getattr(s, "system", s).key for s in systems]


# -- list ------------------------------------------------------------------------------

def test_list_sorts_by_year_with_unknown_years_last(cat):
    assert keys(q.list_systems(catalog=cat)) == [
        "rcuda", "kubeshare", "gemini", "reef", "dxpu", "tgs", "orion",
        "nvidia-mig", "virtai-orion"]


def test_list_reverse_keeps_unknown_years_last(cat):
    listed = keys(q.list_systems("year", reverse=True, catalog=cat))
    assert listed[:2] == ["orion", "tgs"] and listed[-2:] == ["nvidia-mig", "virtai-orion"]


def test_list_by_name_ignores_case(cat):
    assert keys(q.list_systems("name", catalog=cat)) == [
        "dxpu", "gemini", "kubeshare", "nvidia-mig", "orion", "rcuda", "reef", "tgs",
        "virtai-orion"]


def test_list_by_other_keys(cat):
    assert keys(q.list_systems("key", catalog=cat))[0] == "dxpu"
    assert keys(q.list_systems("category", catalog=cat))[0] == "rcuda"  # remote-cuda first
    assert keys(q.list_systems("kind", catalog=cat))[-1] == "nvidia-mig"


def test_list_unknown_sort_lists_the_choices(cat):
    with pytest.raises(q.CatalogError, match="unknown sort 'size'; choose from: year, name"):
        q.list_systems("size", catalog=cat)


# -- filter ----------------------------------------------------------------------------

def test_filter_accepts_enum_members_and_strings(cat):
    by_enum = q.filter_systems(category=Category.TEMPORAL_SHARING, catalog=cat)
    assert keys(by_enum) == ["kubeshare", "gemini", "reef", "tgs", "orion"]
    for spelling in ("temporal-sharing", "TEMPORAL_SHARING", "Sharing: temporal"):
        assert q.filter_systems(category=spelling, catalog=cat) == by_enum
    assert keys(q.filter_systems(kind=Kind.PRODUCT, catalog=cat)) == ["virtai-orion"]
    assert keys(q.filter_systems(kind="hardware-feature", catalog=cat)) == ["nvidia-mig"]


def test_filter_by_area(cat):
    assert keys(q.filter_systems(area="disaggregation", catalog=cat)) == [
        "rcuda", "dxpu", "virtai-orion"]
    assert len(q.filter_systems(area="Sharing", catalog=cat)) == 6


def test_filter_mechanisms_must_all_match(cat):
    assert keys(q.filter_systems(mechanism="api-remoting", catalog=cat)) == ["rcuda", "kubeshare"]
    assert keys(q.filter_systems(mechanism=["api-remoting", Mechanism.KUBERNETES],
                                 catalog=cat)) == ["kubeshare"]
    assert q.filter_systems(mechanism=["mig", "kubernetes"], catalog=cat) == []


def test_filter_venue_is_case_insensitive_and_matches_words(cat):
    assert keys(q.filter_systems(venue="osdi", catalog=cat)) == ["reef"]
    assert keys(q.filter_systems(venue="TACO", catalog=cat)) == ["dxpu"]
    assert keys(q.filter_systems(venue="code optimization", catalog=cat)) == ["dxpu"]


def test_filter_years_are_inclusive_and_drop_unknown_years(cat):
    assert keys(q.filter_systems(since=2023, catalog=cat)) == ["dxpu", "tgs", "orion"]
    assert keys(q.filter_systems(until=2020, catalog=cat)) == ["rcuda", "kubeshare"]
    assert keys(q.filter_systems(since=2021, until=2022, catalog=cat)) == ["gemini", "reef"]


def test_filter_code_three_valued(cat):
    # code links count even when code_public is unset; unknown counts as "no code"
    assert keys(q.filter_systems(code=True, catalog=cat)) == ["gemini", "reef", "tgs",
                                                              "virtai-orion"]
    assert keys(q.filter_systems(code=False, catalog=cat)) == ["rcuda", "kubeshare", "dxpu",
                                                               "orion", "nvidia-mig"]


def test_filters_combine(cat):
    found = q.filter_systems(category="temporal-sharing", since=2021, code=True,
                             mechanism="kernel-preemption", venue="OSDI", catalog=cat)
    assert keys(found) == ["reef"]
    assert q.filter_systems(category="temporal-sharing", code=True, until=2020,
                            catalog=cat) == []
    assert keys(q.filter_systems(area="sharing", kind="research-system", code=False,
                                 sort="name", catalog=cat)) == ["kubeshare", "orion"]


@pytest.mark.parametrize("kwargs, message", [
    ({"category": "tempral"}, re.escape("unknown category 'tempral' (did you mean "
                                        "'temporal-sharing'?); choose from: rpc, remote-cuda,")),
    ({"kind": "tool"}, "unknown kind 'tool'; choose from: research-system, product,"),
    ({"mechanism": ["mps", "preemption"]}, "unknown mechanism 'preemption'.*kernel-preemption"),
    ({"area": "cloud"}, "unknown area 'cloud'; choose from: disaggregation, sharing, survey"),
    ({"venue": "NeurIPS"}, "no entry has venue 'NeurIPS'; venues in the catalogue: .*OSDI"),
    ({"since": 2024, "until": 2020}, r"since \(2024\) is after until \(2020\)"),
    ({"since": "2020"}, "since must be a year"),
])
def test_filter_bad_values_say_what_is_valid(cat, kwargs, message):
    with pytest.raises(q.CatalogError, match=message):
        q.filter_systems(catalog=cat, **kwargs)


def test_catalog_error_is_a_value_error():
    assert issubclass(q.CatalogError, ValueError)


# -- search ----------------------------------------------------------------------------

def test_search_ranks_the_name_above_other_fields(cat):
    hits = q.search("gemini", catalog=cat)
    assert keys(hits) == ["gemini", "tgs"]  # TGS only mentions Gemini in its ideas
    assert hits[0].score > hits[1].score > 0
    system, score = hits[0]  # a Hit is a plain (system, score) pair
    assert system.key == "gemini" and score == hits[0].score


def test_search_is_accent_and_case_insensitive(cat):
    for text in ("politecnica", "POLITÉCNICA", "Politècnica"):
        assert keys(q.search(text, catalog=cat)) == ["rcuda"]


def test_search_ties_are_broken_by_name(cat):
    hits = q.search("national tsing hua", catalog=cat)
    assert keys(hits) == ["gemini", "kubeshare"]
    assert hits[0].score == hits[1].score


def test_search_finds_both_orions_name_first(cat):
    hits = q.search("orion", catalog=cat)
    assert keys(hits) == ["orion", "virtai-orion"]  # ETH's also has it in the title


def test_search_rare_words_weigh_more_than_common_ones(cat):
    hits = q.search("gpu kubernetes", catalog=cat)
    assert hits[0].system.key == "kubeshare"


def test_search_matches_mechanisms_venues_and_word_prefixes(cat):
    assert keys(q.search("unified memory", catalog=cat)) == ["tgs"]
    assert keys(q.search("hpcs", catalog=cat)) == ["rcuda"]
    prefix, whole = q.search("preempt", catalog=cat), q.search("preemption", catalog=cat)
    assert keys(prefix) == keys(whole) == ["reef"] and prefix[0].score < whole[0].score


def test_search_limit_and_no_match(cat):
    assert len(q.search("gpu", limit=2, catalog=cat)) == 2
    assert q.search("quantum", catalog=cat) == []


@pytest.mark.parametrize("text", ["", "   ", "?!"])
def test_search_needs_words(cat, text):
    with pytest.raises(q.CatalogError, match="search needs some text"):
        q.search(text, catalog=cat)


# -- show ------------------------------------------------------------------------------

def test_show_by_key_or_name_ignoring_case(cat):
    assert q.show("reef", catalog=cat).name == "REEF"
    assert q.show("REEF", catalog=cat).key == "reef"
    assert q.show(" rcuda ", catalog=cat).key == "rcuda"
    assert q.show("virtai tech orion", catalog=cat).key == "virtai-orion"
    assert q.show("MIG", catalog=cat).key == "nvidia-mig"  # whole words of a name


def test_show_did_you_mean(cat):
    with pytest.raises(q.UnknownSystemError) as caught:
        q.show("reff", catalog=cat)
    assert str(caught.value) == "no system named 'reff'; did you mean 'reef'?"
    assert caught.value.suggestions == ["reef"]
    assert isinstance(caught.value, KeyError) and isinstance(caught.value, ValueError)


def test_show_suggests_keys_with_their_names(cat):
    with pytest.raises(q.UnknownSystemError) as caught:
        q.show("virtal tech", catalog=cat)
    assert "did you mean 'virtai-orion' (VirtAI Tech Orion)?" in str(caught.value)
    with pytest.raises(q.UnknownSystemError, match="did you mean 'nvidia-mig' .NVIDIA MIG.?"):
        q.show("MIGG", catalog=cat)


def test_show_unknown_without_suggestion(cat):
    with pytest.raises(q.UnknownSystemError, match="^no system named 'zzzz'$"):
        q.show("zzzz", catalog=cat)
    with pytest.raises(q.UnknownSystemError, match="which system"):
        q.show("", catalog=cat)


def test_show_orion_is_ambiguous_but_its_key_is_not(cat):
    with pytest.raises(q.AmbiguousSystemError) as caught:
        q.show("Orion", catalog=cat)
    message = str(caught.value)
    assert "'Orion' names 2 systems" in message and "Use a key" in message
    assert "orion (Orion, EuroSys 2024)" in message
    assert "virtai-orion (VirtAI Tech Orion)" in message
    assert caught.value.keys == ["orion", "virtai-orion"]
    assert isinstance(caught.value, q.UnknownSystemError)
    assert q.show("orion", catalog=cat).institutions == ["ETH"]  # an exact key wins
    assert q.show("virtai-orion", catalog=cat).kind is Kind.PRODUCT


# -- compare ---------------------------------------------------------------------------

def test_compare_rows_hold_one_value_per_system(cat):
    comparison = q.compare(["REEF", "tgs", "Gemini"], catalog=cat)
    assert keys(comparison.systems) == ["reef", "tgs", "gemini"]
    assert list(comparison.rows) == list(q.FIELDS)
    assert comparison.rows["venue"] == ("OSDI", "NSDI", "TCC")
    assert comparison.rows["year"] == (2022, 2023, 2021)
    assert comparison.rows["area"] == ("sharing",) * 3
    assert comparison.rows["mechanisms"][0] == [Mechanism.KERNEL_PREEMPTION,
                                                Mechanism.KERNEL_PADDING]


def test_compare_needs_two_different_systems(cat):
    for names in (["reef"], ["reef", "REEF"], []):
        with pytest.raises(q.CatalogError, match="at least two different systems"):
            q.compare(names, catalog=cat)


def test_compare_unknown_and_ambiguous_names(cat):
    with pytest.raises(q.UnknownSystemError, match="did you mean 'tgs'"):
        q.compare(["reef", "tgss"], catalog=cat)
    with pytest.raises(q.AmbiguousSystemError):
        q.compare(["reef", "Orion"], catalog=cat)


# -- export ----------------------------------------------------------------------------

def test_export_json_round_trips_through_the_model(cat):
    text = q.export(cat.systems, "json")
    assert Catalog.model_validate_json(text) == cat
    assert Catalog.model_validate_json(q.export(catalog=cat)) == cat  # None: everything
    chosen = q.filter_systems(code=True, catalog=cat)
    assert Catalog.model_validate_json(q.export(chosen)).systems == chosen


def test_export_accepts_search_hits(cat):
    text = q.export(q.search("orion", catalog=cat), format="json")
    assert keys(Catalog.model_validate_json(text).systems) == ["orion", "virtai-orion"]


def test_export_csv_header_and_rows(cat):
    text = q.export(cat.systems, "csv")
    rows = list(csv.reader(io.StringIO(text)))
    assert tuple(rows[0]) == q.CSV_COLUMNS
    assert len(rows) == 1 + len(cat.systems)
    by_key = {r["key"]: r for r in csv.DictReader(io.StringIO(text))}
    reef = by_key["reef"]
    assert reef["links"] == ("paper: https://www.usenix.org/osdi22/han; "
                             "code: https://github.com/SJTU-IPADS/reef")
    assert reef["mechanisms"] == "kernel-preemption; kernel-padding"
    assert reef["code_public"] == "true" and reef["year"] == "2022"
    assert reef["area"] == "sharing" and reef["category"] == "temporal-sharing"
    assert reef["identifiers"] == "doi: 10.1/reef"
    assert by_key["rcuda"]["institutions"] == ("Universidad Politécnica de Valencia; "
                                               "Universidad Jaume I")
    assert by_key["dxpu"]["code_public"] == "false" and by_key["tgs"]["code_public"] == ""
    assert by_key["nvidia-mig"]["year"] == ""


def test_export_unknown_format(cat):
    with pytest.raises(q.CatalogError, match="unknown export format 'xml'; choose from: json, csv"):
        q.export(cat.systems, "xml")


# -- dataframe -------------------------------------------------------------------------

def test_to_dataframe_without_pandas_says_how_to_get_it(cat, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # makes 'import pandas' fail
    with pytest.raises(ImportError, match="needs pandas.*pip install pandas"):
        q.to_dataframe(catalog=cat)


def test_to_dataframe_with_pandas(cat):
    pytest.importorskip("pandas")
    frame = q.to_dataframe(catalog=cat)
    assert list(frame.columns) == list(q.CSV_COLUMNS[1:])
    assert frame.index.name == "key" and len(frame) == len(cat.systems)
    assert frame.loc["reef", "mechanisms"] == ["kernel-preemption", "kernel-padding"]
    assert frame.loc["tgs", "links"] == ["code: https://github.com/pkusys/TGS"]
    assert q.to_dataframe(q.search("orion", catalog=cat)).index.tolist() == [
        "orion", "virtai-orion"]


def test_importing_catalog_does_not_import_pandas():
    import subprocess
    code = "import sys, catalog.queries, catalog.render; print('pandas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False"


# -- the shipped data ------------------------------------------------------------------

def test_shipped_data_answers_the_documented_queries():
    data = catalog.load()
    if len(data.systems) < 2:
        pytest.skip("catalog/data/systems.json is not filled in yet")
    assert keys(q.search("politecnica"))[0] == "rcuda"
    with pytest.raises(q.AmbiguousSystemError, match="virtai-orion"):
        q.show("Orion")
    for system in data.systems:
        assert q.show(system.key) is system
    assert Catalog.model_validate_json(q.export()) == data
    assert len(list(csv.reader(io.StringIO(q.export(format="csv"))))) == 1 + len(data.systems)
    assert len(q.list_systems()) == len(data.systems)


# -- the shipped data: systems cited from public pages (issue 52) ---------------------------

def test_queries_find_the_cited_systems_in_the_shipped_data():
    shipped = catalog.load()
    assert q.show("Run:ai GPU memory swap", catalog=shipped).key == "runai-gpu-memory-swap"
    assert q.show("cuda-checkpoint", catalog=shipped).source.kind.value == "repository"
    assert q.show("cricket", catalog=shipped).category == Category.REMOTE_CUDA
    assert q.show("Singularity", catalog=shipped).identifiers == {"arxiv": "2202.07848"}
    swap = q.filter_systems(mechanism=Mechanism.MEMORY_SWAP, catalog=shipped)
    assert [s.key for s in swap] == ["cuda-checkpoint", "runai-gpu-memory-swap"]
    assert {h.system.key for h in q.search("migration", catalog=shipped)} >= {"singularity"}
    assert {s.key for s in q.filter_systems(area="sharing", catalog=shipped)} >= {
        "runai-gpu-memory-swap", "cuda-checkpoint", "singularity"}
    rows = {r["key"]: r for r in csv.DictReader(io.StringIO(q.export(format="csv",
                                                                      catalog=shipped)))}
    assert rows["singularity"]["seed"] == ""
    assert rows["singularity"]["source"] == "paper: http://arxiv.org/abs/2202.07848v2"
    assert rows["reef"]["source"] == "" and rows["reef"]["seed"].endswith(".txt")
