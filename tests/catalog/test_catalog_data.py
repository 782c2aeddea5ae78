"""The catalogue's data file against the survey pages it was written from.

The expected systems are derived by parsing the seed pages in ``tests/seeds/``
(copies of ``../shared/seeds/``): the bold names of seed 000's tables, the
top-level ``* Title (VENUE YEAR)`` bullets of seed 001, and the titles of
seeds 002 and 003. Every fact a seeded entry states (venue, year, institutions,
authors, identifiers, link URLs, mechanisms) must be backed by its seed's text;
every absolute URL a seed gives must be attached to the entry it belongs to.

An entry for a system no seed names cites instead the one public page its facts
come from (``source``). Those pages are not copied here, so the checks are what
can be made offline: no seed names the system, the cited page is the one
recorded below (read for issue 52), and each mechanism is backed by the entry's
own quotations of that page.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from pydantic import ValidationError

import catalog
from catalog.models import (Catalog, Category, Kind, Link, LinkKind, Mechanism, Source,
                            SourceKind, System)
from tests.paths import PROJECT_ROOT

SEEDS_DIR = PROJECT_ROOT / "tests" / "seeds"

SEED_000 = "000_d9d5fcb2f7121cfb.txt"
SEED_001 = "001_15dd47327656f67e.txt"
SEED_002 = "002_ed07bcf57bb4c018.txt"
SEED_003 = "003_b03009e2385ae904.txt"

#: Section headings of seeds 000 and 001 and where they file their systems.
HEADINGS = {
    "RPC": Category.RPC,
    "Remote CUDA": Category.REMOTE_CUDA,
    "Industrial Products": Category.INDUSTRIAL,
    "GPU Temporal Sharing": Category.TEMPORAL_SHARING,
    "GPU Spatial Sharing": Category.SPATIAL_SHARING,
    "Survey": Category.SURVEY,
}
#: Headings that name no systems.
HEADINGS_WITHOUT_SYSTEMS = {"Notes"}

#: Anchor texts of the seeds' links and the kind of link each one is.
ANCHOR_KINDS = {
    "Paper": LinkKind.PAPER,
    "Code": LinkKind.CODE,
    "GitHub": LinkKind.CODE,
    "Homepage": LinkKind.HOMEPAGE,
    "Docs": LinkKind.DOCS,
    "Benchmark": LinkKind.BENCHMARK,
    "Artifact": LinkKind.ARTIFACT,
}

#: The seed's own footer (instructions for agents querying the site): not a system link.
FOOTER_MARK = "# Agent Instructions"

ABSOLUTE_URL = re.compile(r"https?://[^\s\"'<>()\[\]]+")

#: What the seed text must say (case-insensitive, in the entry's block, section heading
#: included) for an entry to list a mechanism.
MECHANISM_EVIDENCE = {
    Mechanism.API_INTERCEPTION: r"\bintercept|\bpreload",
    Mechanism.API_REMOTING: r"\bremot",
    Mechanism.RPC: r"\bRPCs?\b|Remote Procedure Calls",
    Mechanism.SERVERLESS: r"\bserverless\b",
    Mechanism.KERNEL_PREEMPTION: r"kernel preemption",
    Mechanism.KERNEL_PADDING: r"kernel padding",
    Mechanism.KERNEL_INSTRUMENTATION: r"instrument kernels",
    Mechanism.CO_LAUNCH: r"launch kernels together",
    Mechanism.TIME_SLICING: r"time[- ]slic",
    Mechanism.FINE_GRAINED_ALLOCATION: r"fine-grained GPU allocation",
    Mechanism.MPS: r"\bMPS\b",
    Mechanism.MIG: r"\bMIG\b",
    Mechanism.STREAMS: r"\bstream\b",
    Mechanism.STREAM_PRIORITIES: r"stream priorities",
    Mechanism.KUBERNETES: r"\bKubernetes\b",
    Mechanism.CONTAINERS: r"\bcontainer",
    Mechanism.RATE_CONTROL: r"rate control",
    Mechanism.UNIFIED_MEMORY: r"unified memory",
    Mechanism.INTERFERENCE_AWARENESS: r"interference-aware",
    Mechanism.OPERATOR_SCHEDULING: r"schedule (individual GPU )?operators",
    Mechanism.FRAMEWORK_INTEGRATION: r"TensorFlow|PyTorch",
    Mechanism.DYNAMIC_SCALING: r"dynamic scaling|\belastic",
    Mechanism.CONFIGURATION_TUNING: r"tune training configurations",
    Mechanism.PCIE_AWARENESS: r"PCIe bandwidth",
    Mechanism.PROFILING: r"Nsight",
    Mechanism.SOFTWARE_SCHEDULING: r"software-defined GPU scheduling",
    Mechanism.HARDWARE_PARTITIONING: r"partition the GPU",
    Mechanism.PERFORMANCE_MODELING: r"performance model",
    Mechanism.CHECKPOINT_RESTORE: r"\bcheckpoint",
    Mechanism.MEMORY_SWAP: r"\bswap|device memory is copied to the host",
    Mechanism.MIGRATION: r"\bmigrat",
}


# ---------------------------------------------------------------------------------------------
# Reading and parsing the seeds
# ---------------------------------------------------------------------------------------------

def fix_mojibake(text: str) -> str:
    """Undo UTF-8 that was read as Mac Roman ("Polit√©cnica" -> "Politécnica").

    Each run of non-ASCII characters is re-encoded as Mac Roman and decoded as UTF-8;
    runs for which that fails (real non-ASCII text) are left alone.
    """
    def repair(match: re.Match) -> str:
        run = match.group(0)
        try:
            return run.encode("mac_roman").decode("utf-8")
        except (UnicodeEncodeError, UnicodeDecodeError):
            return run
    return re.sub(r"[^\x00-\x7f]+", repair, text)


def seed_text(name: str) -> str:
    """A seed's text, mojibake fixed, without its footer."""
    text = fix_mojibake((SEEDS_DIR / name).read_text(encoding="utf-8"))
    return text.split(FOOTER_MARK)[0]


def strip_markup(text: str) -> str:
    text = re.sub(r"<[^>]+>", " ", text)
    text = text.replace("*", "").replace("\\[", "[")
    return re.sub(r"\s+", " ", text)


@dataclass
class SeedItem:
    """One system as a seed names it."""

    seed: str
    category: Category
    label: str                      # the bold name (seed 000) or the title (others)
    by_title: bool                  # match entries on title (else on name)
    venue: str | None = None
    year: int | None = None
    block: str = ""                 # the item's text, its section heading first
    links: list[tuple[str, LinkKind | None]] = field(default_factory=list)
    identifiers: dict[str, str] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.seed[:3]}:{self.label}"


def _sections(text: str) -> list[tuple[str, str]]:
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return [(parts[i].strip(), parts[i + 1]) for i in range(1, len(parts), 2)]


def _html_links(html: str) -> list[tuple[str, LinkKind | None]]:
    return [(url, ANCHOR_KINDS.get(anchor.strip()))
            for url, anchor in re.findall(r'<a href="(https?://[^"]+)">([^<]+)</a>', html)]


def _venue_year(text: str) -> tuple[str | None, int | None]:
    m = re.fullmatch(r"(.+) (\d{4})", text.strip())
    return (m.group(1), int(m.group(2))) if m else (None, None)


def parse_seed_000() -> list[SeedItem]:
    items = []
    for heading, body in _sections(seed_text(SEED_000)):
        rows = re.findall(r"<tr>(.*?)</tr>", body, flags=re.S)
        rows += [line for line in body.splitlines() if line.startswith("|") and "**" in line]
        named = [row for row in rows if "<strong>" in row or "**" in row]
        if heading in HEADINGS_WITHOUT_SYSTEMS:
            assert not named, f"systems under {heading!r}"
            continue
        assert heading in HEADINGS, f"unknown heading {heading!r}"
        for row in named:
            m = re.search(r"<strong>(.+?)</strong>|\*\*(.+?)\*\*", row)
            name = (m.group(1) or m.group(2)).strip()
            venue = year = None
            cells = re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)
            if len(cells) >= 2:
                venue, year = _venue_year(re.sub(r"<[^>]+>", "", cells[1]))
            items.append(SeedItem(SEED_000, HEADINGS[heading], name, by_title=False, venue=venue,
                                  year=year, block=f"{heading}\n{row}", links=_html_links(row)))
    return items


BULLET = re.compile(
    r"^\* (?P<title>.+?)"
    r"(?: \((?:\[(?P<venue_year>[^\]]+)\]\([^)]*\)|arXiv (?P<arxiv>[^)\s]+))\))?"
    r"(?: \\\[|$)")
MD_LINK = re.compile(r"\[(?P<anchor>[^\[\]]+)\]\((?P<url>https?://[^)\s]+)\)")


def parse_seed_001() -> list[SeedItem]:
    items = []
    for heading, body in _sections(seed_text(SEED_001)):
        blocks: list[list[str]] = []
        for line in body.splitlines():
            if line.startswith("* "):
                blocks.append([line])
            elif line.startswith("  ") and blocks:
                blocks[-1].append(line)
        if heading in HEADINGS_WITHOUT_SYSTEMS:
            assert not blocks
            continue
        assert heading in HEADINGS, f"unknown heading {heading!r}"
        for lines in blocks:
            m = BULLET.match(lines[0])
            assert m, f"unparsed bullet {lines[0]!r}"
            venue = year = None
            identifiers = {}
            if m.group("venue_year"):
                venue, year = _venue_year(m.group("venue_year"))
            elif m.group("arxiv"):
                venue, identifiers = "arXiv", {"arxiv": m.group("arxiv")}
            links = [(lm.group("url"), ANCHOR_KINDS.get(lm.group("anchor")))
                     for lm in MD_LINK.finditer("\n".join(lines))]
            items.append(SeedItem(SEED_001, HEADINGS[heading], m.group("title"), by_title=True,
                                  venue=venue, year=year, block=heading + "\n" + "\n".join(lines),
                                  links=links, identifiers=identifiers))
    return items


def parse_seed_002() -> list[SeedItem]:
    text = seed_text(SEED_002)
    title = next(line.strip() for line in text.splitlines() if line.strip())
    venue = re.search(r"\bVenue (.+?) Last Checked", text).group(1)
    year = int(re.search(r"^\w+ \d{1,2}, (\d{4})", text, flags=re.M).group(1))
    arxiv = re.search(r"arXiv ID (\S+)", text).group(1)
    # The page has no section heading; it is a datacenter-scale GPU pool ("datacenter-scale
    # GPU disaggregation", "Large Scale Disaggregated GPU Pools in the Datacenter").
    assert "datacenter-scale GPU disaggregation" in text
    return [SeedItem(SEED_002, Category.DATACENTER_POOLING, title, by_title=True, venue=venue,
                     year=year, block=text, identifiers={"arxiv": arxiv},
                     links=[(url, None) for url in ABSOLUTE_URL.findall(text)])]


def parse_seed_003() -> list[SeedItem]:
    text = seed_text(SEED_003)
    record = json.loads(next(line for line in text.splitlines() if line.startswith("{")))
    assert "serverless" in record["title"].lower()
    return [SeedItem(SEED_003, Category.SERVERLESS, record["title"], by_title=True,
                     venue=record["journal"]["name"], year=int(record["publicationDate"][:4]),
                     block=text, identifiers={"doi": record["doi"]},
                     links=[(record["ListUrlMain"], LinkKind.PAPER)])]


SEED_ITEMS = parse_seed_000() + parse_seed_001() + parse_seed_002() + parse_seed_003()
CATALOG = catalog.load()
SYSTEMS = CATALOG.systems
#: The entries written from a seed, and those that cite a public page instead.
SEEDED = [s for s in SYSTEMS if s.seed is not None]
SOURCED = [s for s in SYSTEMS if s.source is not None]

#: The public page each entry without a seed was written from, as read (issue 52).
SOURCES = {
    "runai-gpu-memory-swap": (SourceKind.DOCUMENTATION,
                              "https://github.com/run-ai/docs/blob/04cba6277720ac41f15ea8a4ec955eef"
                              "557bcf06/docs/Researcher/scheduling/gpu-memory-swap.md"),
    "cuda-checkpoint": (SourceKind.REPOSITORY,
                        "https://github.com/NVIDIA/cuda-checkpoint/blob/6ec728aff032c18c9fb0794a27"
                        "2d94c6adcce508/README.md"),
    "cricket": (SourceKind.REPOSITORY,
                "https://github.com/RWTH-ACS/cricket/blob/5d55bd582fc7acbb2a12c45f104020566a67218a/"
                "README.md"),
    "singularity": (SourceKind.PAPER, "http://arxiv.org/abs/2202.07848v2"),
}


def matching_entries(item: SeedItem) -> list[System]:
    return [s for s in SYSTEMS
            if s.seed == item.seed and (s.title if item.by_title else s.name) == item.label]


def item_of(system: System) -> SeedItem:
    items = [i for i in SEED_ITEMS if system in matching_entries(i)]
    assert len(items) == 1, f"{system.key}: matches {len(items)} seed items"
    return items[0]


# ---------------------------------------------------------------------------------------------
# The seeds themselves
# ---------------------------------------------------------------------------------------------

def test_seed_copies_are_the_pages_the_catalogue_was_built_from():
    """The copies in tests/seeds/ are byte for byte the survey pages (``../shared/seeds/``
    when they were copied): their SHA-256 sums are recorded beside them, so the check needs
    nothing outside the repository."""
    recorded = {}
    for line in (SEEDS_DIR / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        recorded[name] = digest
    assert sorted(recorded) == sorted(p.name for p in SEEDS_DIR.glob("*.txt"))
    for name, digest in recorded.items():
        assert hashlib.sha256((SEEDS_DIR / name).read_bytes()).hexdigest() == digest, name


def test_mojibake_fix():
    raw = (SEEDS_DIR / SEED_000).read_text(encoding="utf-8")
    assert "Polit√©cnica" in raw
    fixed = fix_mojibake(raw)
    assert "Universidad Politécnica de Valencia" in fixed and "√" not in fixed
    # Real non-ASCII text is left alone.
    assert fix_mojibake("Queen’s — 引用次数 é") == "Queen’s — 引用次数 é"


def test_parser_finds_the_systems_the_seeds_name():
    """The parse is the source of truth; this checks it did not silently miss anything."""
    labels = {i.seed[:3]: [] for i in SEED_ITEMS}
    for item in SEED_ITEMS:
        labels[item.seed[:3]].append(item.label)
    assert labels["000"] == ["FractOS", "DGSF", "rCUDA", "VMware vSphere Bitfusion",
                             "VirtAI Tech Orion"]
    assert len(labels["001"]) == 14
    assert labels["001"][0].startswith("Orion:") and labels["001"][-1].startswith(
        "GPU Virtualization and Scheduling Methods")
    assert labels["002"] == ["DxPU: Large Scale Disaggregated GPU Pools in the Datacenter"]
    assert labels["003"] == ["Disaggregated GPU Acceleration for Serverless Applications"]
    # Every top-level bullet and every bold table name was parsed.
    text_001 = seed_text(SEED_001)
    assert len(re.findall(r"^\* ", text_001, flags=re.M)) == len(labels["001"])
    text_000 = seed_text(SEED_000)
    assert len(re.findall(r"<strong>|\*\*[^*|]+\*\*", text_000)) == len(labels["000"])


# ---------------------------------------------------------------------------------------------
# Coverage: seeds <-> entries
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("item", SEED_ITEMS, ids=lambda i: i.id)
def test_every_named_system_has_one_entry(item: SeedItem):
    entries = matching_entries(item)
    assert len(entries) == 1, f"{item.id}: {len(entries)} entries"
    entry = entries[0]
    assert entry.category == item.category, "category must follow the seed's section heading"
    if item.venue is not None:
        assert entry.venue == item.venue
    if item.year is not None:
        assert entry.year == item.year
    else:
        assert entry.year is None, "the seed states no year"
    for k, v in item.identifiers.items():
        assert entry.identifiers.get(k) == v


def test_every_entry_has_a_seed_or_a_source():
    assert len(SEEDED) + len(SOURCED) == len(SYSTEMS)
    assert not {s.key for s in SEEDED} & {s.key for s in SOURCED}


def test_every_seeded_entry_comes_from_one_seed_item():
    for system in SEEDED:
        item_of(system)
    assert len(SEEDED) == len(SEED_ITEMS)


def test_every_seed_url_is_attached_to_an_entry():
    attached = {str(link.url) for s in SEEDED for link in s.links}
    urls = {url for name in (SEED_000, SEED_001, SEED_002, SEED_003)
            for url in ABSOLUTE_URL.findall(seed_text(name))}
    assert urls, "no URLs parsed"
    assert urls - attached == set()
    assert attached - urls == set()


def test_footer_link_is_not_a_system_link():
    raw = (SEEDS_DIR / SEED_001).read_text(encoding="utf-8")
    footer = raw.split(FOOTER_MARK)[1]
    footer_urls = ABSOLUTE_URL.findall(footer)
    assert footer_urls
    attached = {str(link.url) for s in SYSTEMS for link in s.links}
    assert not any(u.startswith(f) or f.startswith(u) for u in attached for f in footer_urls)


# ---------------------------------------------------------------------------------------------
# Every fact of every entry is in its seed
# ---------------------------------------------------------------------------------------------

ENTRY_PARAMS = pytest.mark.parametrize("system", SEEDED, ids=lambda s: s.key)
ALL_PARAMS = pytest.mark.parametrize("system", SYSTEMS, ids=lambda s: s.key)
SOURCED_PARAMS = pytest.mark.parametrize("system", SOURCED, ids=lambda s: s.key)


@ENTRY_PARAMS
def test_facts_occur_in_the_seed(system: System):
    assert (SEEDS_DIR / system.seed).is_file()
    text = seed_text(system.seed)
    item = item_of(system)
    if system.venue is not None:
        assert system.venue in text
    if system.year is not None:
        assert str(system.year) in text
    if system.title is not None:
        assert system.title in strip_markup(item.block) or system.title in item.block
    for institution in system.institutions:
        assert institution in item.block, institution
    for author in system.authors:
        assert author in text, author
    for key, value in system.identifiers.items():
        assert key in {"doi", "arxiv"}
        assert value in text, value


@ENTRY_PARAMS
def test_links_are_the_seed_items_links(system: System):
    item = item_of(system)
    assert [str(link.url) for link in system.links] == [url for url, _ in item.links]
    for link, (_, kind) in zip(system.links, item.links):
        assert kind is not None, f"unknown anchor text for {link.url}"
        assert link.kind == kind, str(link.url)
        if link.note is not None:
            assert link.note in item.block


@ENTRY_PARAMS
def test_code_public_follows_the_code_links(system: System):
    if system.links_of(LinkKind.CODE):
        assert system.code_public is True
    elif system.code_public is False:
        assert re.search(r"no code", seed_text(system.seed), flags=re.I), \
            "code_public is False only where the seed says there is no code"
    else:
        assert system.code_public is None


@ENTRY_PARAMS
def test_mechanisms_are_backed_by_the_seed(system: System):
    block = strip_markup(item_of(system).block)
    assert len(set(system.mechanisms)) == len(system.mechanisms)
    for mechanism in system.mechanisms:
        assert re.search(MECHANISM_EVIDENCE[mechanism], block, flags=re.I), mechanism.value


def test_every_mechanism_has_an_evidence_pattern():
    assert set(MECHANISM_EVIDENCE) == set(Mechanism)


@pytest.mark.parametrize("system", [s for s in SEEDED if s.seed in (SEED_000, SEED_001)],
                         ids=lambda s: s.key)
def test_ideas_are_the_seeds_words(system: System):
    block = strip_markup(item_of(system).block)
    for idea in system.ideas:
        assert strip_markup(idea) in block, idea


@ENTRY_PARAMS
def test_results_are_the_seeds_sentences(system: System):
    """Headline results are quoted, not paraphrased (case and spacing aside)."""
    text = re.sub(r"\s+", " ", seed_text(system.seed)).lower()
    for result in system.results:
        assert re.sub(r"\s+", " ", result).lower() in text, result


@ENTRY_PARAMS
def test_authors_only_where_the_seed_lists_them(system: System):
    if system.seed in (SEED_000, SEED_001):
        assert system.authors == []
    else:
        assert system.authors


@ALL_PARAMS
def test_relation_is_written(system: System):
    assert system.relation and system.relation.strip()


def test_no_mojibake_in_the_data():
    raw = (Path(catalog.__file__).parent / "data" / "systems.json").read_text(encoding="utf-8")
    assert fix_mojibake(raw) == raw
    assert "Universidad Politécnica de Valencia" in raw


# ---------------------------------------------------------------------------------------------
# Specific entries the brief spells out
# ---------------------------------------------------------------------------------------------

def by_key(key: str) -> System:
    return next(s for s in SYSTEMS if s.key == key)


def test_keys_are_unique_slugs():
    keys = [s.key for s in SYSTEMS]
    assert len(keys) == len(set(keys))
    assert all(re.fullmatch(r"[a-z0-9][a-z0-9-]*", k) for k in keys)


def test_the_two_orions_are_distinct():
    orion, virtai = by_key("orion"), by_key("virtai-orion")
    assert orion.venue == "EuroSys" and orion.year == 2024 and orion.seed == SEED_001
    assert virtai.kind == Kind.PRODUCT and virtai.seed == SEED_000 and virtai.venue is None
    assert virtai.links[0].note == "in Chinese" and virtai.code_public is True


def test_split_institutions():
    assert by_key("gaiagpu").institutions == ["PKU", "Tencent"]
    assert by_key("iadeep").institutions == ["UMacau", "SIAT, CAS"]
    assert by_key("rcuda").institutions[0] == "Universidad Politécnica de Valencia"


def test_dxpu_and_serverless_papers():
    dxpu = by_key("dxpu")
    assert dxpu.kind == Kind.PAPER and dxpu.category == Category.DATACENTER_POOLING
    assert dxpu.code_public is False and dxpu.links == []
    assert dxpu.identifiers == {"arxiv": "2310.04648"} and len(dxpu.authors) == 12
    assert any("less than 10%" in r for r in dxpu.results)
    osr = next(s for s in SYSTEMS if s.seed == SEED_003)
    assert osr.kind == Kind.PAPER and osr.category == Category.SERVERLESS
    assert osr.identifiers == {"doi": "10.1145/3606557.3606560"} and osr.year == 2023


def test_entries_the_seeds_say_nothing_about_have_no_mechanisms():
    assert by_key("vmware-vsphere-bitfusion").mechanisms == []
    assert by_key("virtai-orion").mechanisms == []


# ---------------------------------------------------------------------------------------------
# The model rejects bad data
# ---------------------------------------------------------------------------------------------

def minimal(**overrides) -> dict:
    data = {"key": "x", "name": "X", "category": "rpc", "kind": "paper", "seed": SEED_000}
    data.update(overrides)
    return data


def test_minimal_entry_is_valid():
    System.model_validate(minimal())


def test_unknown_mechanism_is_rejected():
    with pytest.raises(ValidationError):
        System.model_validate(minimal(mechanisms=["telepathy"]))


@pytest.mark.parametrize("url", ["not a url", "ftp://example.org/x", "", "example.org/page",
                                 "https://"])
def test_bad_url_is_rejected(url: str):
    with pytest.raises(ValidationError):
        Link.model_validate({"kind": "paper", "url": url})
    with pytest.raises(ValidationError):
        System.model_validate(minimal(links=[{"kind": "paper", "url": url}]))


def test_unknown_link_kind_is_rejected():
    with pytest.raises(ValidationError):
        Link.model_validate({"kind": "video", "url": "https://example.org/"})


def test_duplicate_keys_are_rejected():
    with pytest.raises(ValidationError, match="duplicate keys"):
        Catalog.model_validate({"systems": [minimal(key="a"), minimal(key="a", name="Y")]})


@pytest.mark.parametrize("blank", ["", "   ", "\t"])
def test_blank_institution_is_rejected(blank: str):
    with pytest.raises(ValidationError):
        System.model_validate(minimal(institutions=["ICL", blank]))


@pytest.mark.parametrize("key", ["Orion", "virtai orion", "-x", "", "orion_2024"])
def test_bad_key_is_rejected(key: str):
    with pytest.raises(ValidationError):
        System.model_validate(minimal(key=key))


def test_unknown_field_and_category_are_rejected():
    with pytest.raises(ValidationError):
        System.model_validate(minimal(citations=13))
    with pytest.raises(ValidationError):
        System.model_validate(minimal(category="quantum"))


@pytest.mark.parametrize(("field", "value"), [("seed", ""), ("source", {"kind": "paper"}),
                                              ("source", {"kind": "blog", "url": "https://x.org/"}),
                                              ("source", {"kind": "paper", "url": "not a url"})])
def test_bad_seed_or_source_is_rejected(field: str, value):
    data = minimal(seed=None)
    data[field] = value
    with pytest.raises(ValidationError):
        System.model_validate(data)


# ---------------------------------------------------------------------------------------------
# An entry names exactly one of its seed and its public source
# ---------------------------------------------------------------------------------------------

PAGE = {"kind": "repository", "url": "https://github.com/NVIDIA/cuda-checkpoint"}


def test_an_entry_may_cite_a_public_page_instead_of_a_seed():
    system = System.model_validate(minimal(seed=None, source=PAGE))
    assert system.seed is None
    assert system.source == Source(kind=SourceKind.REPOSITORY, url=PAGE["url"])
    assert system.origin == "repository: https://github.com/NVIDIA/cuda-checkpoint"
    assert System.model_validate(minimal()).origin == f"seed: {SEED_000}"


def test_an_entry_with_both_seed_and_source_is_rejected():
    with pytest.raises(ValidationError, match="exactly one of 'seed'.*and 'source'"):
        System.model_validate(minimal(source=PAGE))


def test_an_entry_with_neither_seed_nor_source_is_rejected():
    data = minimal()
    del data["seed"]
    with pytest.raises(ValidationError, match="exactly one of 'seed'.*and 'source'"):
        System.model_validate(data)
    with pytest.raises(ValidationError, match="exactly one of"):
        System.model_validate(minimal(seed=None, source=None))


def test_a_catalogue_with_an_entry_of_neither_is_rejected():
    with pytest.raises(ValidationError, match="exactly one of"):
        Catalog.model_validate({"systems": [minimal(key="a"), minimal(key="b", seed=None)]})


# ---------------------------------------------------------------------------------------------
# Entries from a cited public page (systems no seed names)
# ---------------------------------------------------------------------------------------------

def test_the_cited_entries_are_the_four_of_issue_52():
    assert {s.key for s in SOURCED} == set(SOURCES)


@SOURCED_PARAMS
def test_no_seed_names_a_cited_system(system: System):
    """The rule: a public page is cited only for a system the seeds do not name."""
    names = {system.name, system.key, *(system.title and [system.title] or [])}
    for seed in (SEED_000, SEED_001, SEED_002, SEED_003):
        text = seed_text(seed).casefold()
        for name in names:
            assert not re.search(rf"\b{re.escape(name.casefold())}\b", text), (seed, name)


@SOURCED_PARAMS
def test_the_source_is_the_page_read(system: System):
    kind, url = SOURCES[system.key]
    assert system.source.kind == kind and str(system.source.url) == url


@SOURCED_PARAMS
def test_cited_mechanisms_are_backed_by_the_entrys_quotations(system: System):
    """The ideas and results quote the cited page; each mechanism must show in them."""
    text = " ".join([system.title or "", *system.ideas, *system.results])
    assert len(set(system.mechanisms)) == len(system.mechanisms)
    for mechanism in system.mechanisms:
        assert re.search(MECHANISM_EVIDENCE[mechanism], text, flags=re.I), mechanism.value


@SOURCED_PARAMS
def test_cited_entries_follow_the_data_rules(system: System):
    assert system.ideas, "an entry from a public page quotes what it says"
    if system.links_of(LinkKind.CODE):
        assert system.code_public is True
    else:
        assert system.code_public is None
    for key in system.identifiers:
        assert key in {"doi", "arxiv"}
    assert fix_mojibake(system.model_dump_json()) == system.model_dump_json()


def test_cited_entries_state_only_what_their_page_says():
    """What each page gives, pinned: a fact changed here must be checked against the page."""
    cuda = by_key("cuda-checkpoint")
    assert (cuda.year, cuda.venue, cuda.code_public) == (None, None, None)
    assert Mechanism.MIGRATION not in cuda.mechanisms  # "does not support GPU migration"
    assert set(cuda.mechanisms) == {Mechanism.CHECKPOINT_RESTORE, Mechanism.MEMORY_SWAP}
    runai = by_key("runai-gpu-memory-swap")
    assert runai.kind == Kind.PRODUCT and runai.results == [] and runai.year is None
    assert Mechanism.MEMORY_SWAP in runai.mechanisms
    cricket = by_key("cricket")
    assert cricket.category == Category.REMOTE_CUDA and cricket.code_public is True
    assert cricket.identifiers == {"doi": "10.1002/cpe.6474"} and cricket.year == 2022
    assert Mechanism.CHECKPOINT_RESTORE in cricket.mechanisms
    singularity = by_key("singularity")
    assert singularity.identifiers == {"arxiv": "2202.07848"} and singularity.year == 2022
    assert len(singularity.authors) == 26 and singularity.institutions == ["Microsoft"]
    assert set(singularity.mechanisms) == {Mechanism.MIGRATION, Mechanism.DYNAMIC_SCALING}
