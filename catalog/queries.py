"""Queries over the catalogue: list, filter, search, show, compare, export.

Pure functions over a :class:`~catalog.models.Catalog` (``catalog.load()`` when
none is given) that return models, never printed text, so that the magic, the
command line and the Jupyter server extension share one implementation and
render the results their own way (see :mod:`catalog.render`). Bad input raises
:class:`CatalogError` (a ``ValueError``) whose message lists what is valid,
because the magic and the CLI show that message to a person as it is.
"""

from __future__ import annotations

import csv
import difflib
import io
import math
import re
import unicodedata
from dataclasses import dataclass
from enum import Enum
from typing import Any, Iterable, NamedTuple, TypeVar

from .data import load
from .models import AREA_OF, Catalog, Category, Kind, LinkKind, Mechanism, Source, System

__all__ = [
    "CatalogError", "UnknownSystemError", "AmbiguousSystemError", "Hit", "Comparison",
    "SORT_KEYS", "AREAS", "FIELDS", "CSV_COLUMNS", "EXPORT_FORMATS", "SEARCH_WEIGHTS",
    "list_systems", "filter_systems", "search", "show", "compare", "export", "to_dataframe",
    "has_code", "fold", "field_value",
]


class CatalogError(ValueError):
    """Bad input to a query; the message is meant for a person and says what is valid."""


class UnknownSystemError(CatalogError, KeyError):
    """No entry is named so. ``suggestions`` holds the close names (difflib)."""

    def __init__(self, message: str, query: str = "", suggestions: Iterable[str] = ()):
        super().__init__(message)
        self.query = query
        self.suggestions = list(suggestions)

    def __str__(self) -> str:  # KeyError would show the repr of the message
        return str(self.args[0])


class AmbiguousSystemError(UnknownSystemError):
    """Several entries answer to the name (there are two "Orion"s); ``keys`` lists them."""

    def __init__(self, message: str, query: str = "", keys: Iterable[str] = ()):
        self.keys = list(keys)
        super().__init__(message, query, self.keys)


class Hit(NamedTuple):
    """One search result: a plain ``(system, score)`` pair with names."""

    system: System
    score: float


@dataclass(frozen=True)
class Comparison:
    """Systems side by side: ``rows[field]`` holds one raw value per system, in order."""

    systems: tuple[System, ...]
    rows: dict[str, tuple[Any, ...]]


#: The fields of an entry in display order, with their labels (used by show and compare).
FIELDS: dict[str, str] = {
    "name": "Name", "key": "Key", "title": "Title", "venue": "Venue", "year": "Year",
    "area": "Area", "category": "Category", "kind": "Kind", "institutions": "Institutions",
    "authors": "Authors", "mechanisms": "Mechanisms", "code_public": "Code public",
    "links": "Links", "ideas": "Key ideas", "results": "Results",
    "identifiers": "Identifiers", "origin": "Source (seed or cited page)",
    "relation": "Relation to gpu-workbench (our note, not from the survey or the cited page)",
}
AREAS: tuple[str, ...] = tuple(sorted(set(AREA_OF.values())))
EXPORT_FORMATS: tuple[str, ...] = ("json", "csv")
CSV_COLUMNS: tuple[str, ...] = (
    "key", "name", "title", "venue", "year", "area", "category", "kind", "institutions",
    "authors", "mechanisms", "code_public", "links", "ideas", "results", "relation",
    "identifiers", "seed", "source",
)
#: How much a query word counts in each field; the name counts most.
SEARCH_WEIGHTS: dict[str, float] = {
    "name": 10.0, "title": 4.0, "institutions": 3.0, "mechanisms": 3.0, "venue": 2.0,
    "ideas": 2.0,
}


# -- helpers -------------------------------------------------------------------------------

def fold(text: str) -> str:
    """Case- and accent-insensitive form: 'Politècnica' and 'POLITECNICA' fold alike."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def _tokens(text: str) -> list[str]:
    return re.findall(r"[^\W_]+", fold(text))


def has_code(system: System) -> bool:
    """True when the entry has public code (a code link, or the seed says so)."""
    return system.code_public is True or bool(system.links_of(LinkKind.CODE))


def _systems(catalog: Catalog | None) -> list[System]:
    return list((catalog if catalog is not None else load()).systems)


E = TypeVar("E", bound=Enum)


def _coerce(enum: type[E], value: E | str, what: str) -> E:
    """Accept a member, its value ('temporal-sharing'), its name, or for categories the label."""
    if isinstance(value, enum):
        return value
    wanted = fold(str(value)).strip().replace("_", "-").replace(" ", "-")
    for member in enum:
        forms = {member.value, member.name.lower().replace("_", "-")}
        if isinstance(member, Category):
            forms.add(fold(member.label).replace(" ", "-"))
        if wanted in forms:
            return member
    valid = [m.value for m in enum]
    close = difflib.get_close_matches(wanted, valid, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise CatalogError(f"unknown {what} {value!r}{hint}; choose from: {', '.join(valid)}")


def _as_list(value: Any) -> list[Any]:
    return [] if value is None else [value] if isinstance(value, (str, Enum)) else list(value)


# -- list and filter -----------------------------------------------------------------------

def _name_key(s: System) -> tuple[str, str]:
    return (fold(s.name), s.key)


SORT_KEYS: dict[str, Any] = {
    "year": lambda s: (s.year is None, s.year or 0, *_name_key(s)),
    "name": _name_key,
    "key": lambda s: s.key,
    "venue": lambda s: (s.venue is None, fold(s.venue or ""), *_name_key(s)),
    "category": lambda s: (list(Category).index(s.category), *_name_key(s)),
    "kind": lambda s: (list(Kind).index(s.kind), *_name_key(s)),
}


def _sorted(systems: Iterable[System], sort: str, reverse: bool = False) -> list[System]:
    if sort not in SORT_KEYS:
        raise CatalogError(f"unknown sort {sort!r}; choose from: {', '.join(SORT_KEYS)}")
    ordered = sorted(systems, key=SORT_KEYS[sort])
    if reverse and sort in ("year", "venue"):  # entries without one stay last, by name
        missing = [s for s in ordered if getattr(s, sort) is None]
        return [s for s in ordered if getattr(s, sort) is not None][::-1] + missing
    return ordered[::-1] if reverse else ordered


def list_systems(sort: str = "year", *, reverse: bool = False,
                 catalog: Catalog | None = None) -> list[System]:
    """Every entry, oldest first by default; entries with no year come last."""
    return _sorted(_systems(catalog), sort, reverse)


def _venue_matches(wanted: list[str], venue: str | None) -> bool:
    """Equal ignoring case, or the words appear in a row ('taco' in '... (TACO)')."""
    return bool(venue and wanted) and _contains_run(_tokens(venue), wanted)


def filter_systems(*, category: Category | str | None = None, area: str | None = None,
                   kind: Kind | str | None = None,
                   mechanism: Mechanism | str | Iterable[Mechanism | str] | None = None,
                   venue: str | None = None, since: int | None = None, until: int | None = None,
                   code: bool | None = None, sort: str = "year",
                   catalog: Catalog | None = None) -> list[System]:
    """The entries matching every criterion given (``None`` means "any").

    ``mechanism`` takes one or several, and an entry must list all of them.
    ``since``/``until`` are inclusive years and drop entries without a year.
    ``code=False`` keeps entries with no known public code (unknown counts as none).
    An unknown category, kind, area, mechanism or venue raises :class:`CatalogError`
    listing the valid ones, since an empty result would hide the typo.
    """
    systems = _systems(catalog)
    want_category = _coerce(Category, category, "category") if category is not None else None
    want_kind = _coerce(Kind, kind, "kind") if kind is not None else None
    want_mechanisms = {_coerce(Mechanism, m, "mechanism") for m in _as_list(mechanism)}
    if area is not None and fold(area).strip() not in AREAS:
        raise CatalogError(f"unknown area {area!r}; choose from: {', '.join(AREAS)}")
    want_venue = _tokens(venue) if venue is not None else None
    if want_venue is not None and not any(_venue_matches(want_venue, s.venue) for s in systems):
        venues = sorted({s.venue for s in systems if s.venue}, key=fold)
        raise CatalogError(f"no entry has venue {venue!r}; venues in the catalogue: "
                           f"{', '.join(venues)}")
    for name, year in (("since", since), ("until", until)):
        if year is not None and (isinstance(year, bool) or not isinstance(year, int)):
            raise CatalogError(f"{name} must be a year (an integer), not {year!r}")
    if since is not None and until is not None and since > until:
        raise CatalogError(f"since ({since}) is after until ({until})")

    def keep(s: System) -> bool:
        return ((want_category is None or s.category == want_category)
                and (area is None or s.area == fold(area).strip())
                and (want_kind is None or s.kind == want_kind)
                and want_mechanisms.issubset(s.mechanisms)
                and (want_venue is None or _venue_matches(want_venue, s.venue))
                and (since is None or (s.year is not None and s.year >= since))
                and (until is None or (s.year is not None and s.year <= until))
                and (code is None or has_code(s) == bool(code)))

    return _sorted(filter(keep, systems), sort)


# -- search --------------------------------------------------------------------------------

def _search_fields(s: System) -> dict[str, set[str]]:
    return {
        "name": set(_tokens(s.name)) | set(_tokens(s.key)),
        "title": set(_tokens(s.title or "")),
        "institutions": {t for i in s.institutions for t in _tokens(i)},
        "mechanisms": {t for m in s.mechanisms for t in _tokens(m.value)},
        "venue": set(_tokens(s.venue or "")),
        "ideas": {t for i in s.ideas for t in _tokens(i)},
    }


def search(text: str, *, limit: int | None = None,
           catalog: Catalog | None = None) -> list[Hit]:
    """Entries matching any word of *text*, most relevant first (ties by name).

    Each query word adds, for each field it occurs in, the field's weight
    (:data:`SEARCH_WEIGHTS`) times how rare the word is in the catalogue (BM25's
    idf), so "gpu" counts far less than "kubernetes"; a word that only begins a field's
    word ("preempt" in "preemption") counts half.
    """
    words = list(dict.fromkeys(_tokens(text or "")))
    if not words:
        raise CatalogError("search needs some text, e.g. 'preemption' or 'politecnica'")
    systems = _systems(catalog)
    fields = [(s, _search_fields(s)) for s in systems]
    rarity = {}
    for word in words:
        documents = sum(1 for _, f in fields if any(_matches(word, t) for t in f.values()))
        rarity[word] = math.log(1 + (len(systems) - documents + 0.5) / (documents + 0.5))
    hits = []
    for s, by_field in fields:
        score = 0.0
        for word in words:
            for field, tokens in by_field.items():
                score += SEARCH_WEIGHTS[field] * rarity[word] * _matches(word, tokens)
        if score > 0:
            hits.append(Hit(s, round(score, 2)))
    hits.sort(key=lambda h: (-h.score, *_name_key(h.system)))
    return hits[:limit] if limit is not None else hits


def _matches(word: str, tokens: set[str]) -> float:
    if word in tokens:
        return 1.0
    if len(word) >= 3 and any(t.startswith(word) for t in tokens):
        return 0.5
    return 0.0


# -- show and compare ----------------------------------------------------------------------

def show(name_or_key: str, *, catalog: Catalog | None = None) -> System:
    """The entry with this key, or else this name (case- and accent-insensitive).

    An exact key always wins ('orion' is the ETH system). Otherwise the query
    must name exactly one entry, by key, by name, or as whole words of a name;
    "Orion" names two, so it raises :class:`AmbiguousSystemError` listing both keys.
    """
    systems = _systems(catalog)
    query = (name_or_key or "").strip()
    if not query:
        raise UnknownSystemError("which system? give a name or a key, e.g. 'reef'", query)
    for s in systems:
        if s.key == query:
            return s
    wanted, words = fold(query), _tokens(query)
    exact = [s for s in systems if wanted in (fold(s.key), fold(s.name))]
    partial = [s for s in systems if words and _contains_run(_tokens(s.name), words)]
    found = list({s.key: s for s in exact + partial}.values())
    if len(found) == 1:
        return found[0]
    if found:
        listed = "; ".join(f"{s.key} ({_describe(s)})" for s in found)
        raise AmbiguousSystemError(
            f"{query!r} names {len(found)} systems: {listed}. Use a key to pick one.",
            query, [s.key for s in found])
    # suggest keys, which are unambiguous, matching the typo against keys, names and words
    forms: dict[str, str] = {}
    for s in systems:
        for form in (s.key, fold(s.name), *_tokens(s.name)):
            forms.setdefault(form, s.key)
    close = difflib.get_close_matches(wanted, list(forms), n=5, cutoff=0.6)
    suggestions = list(dict.fromkeys(forms[c] for c in close))[:3]
    by_key = {s.key: s for s in systems}
    shown = [repr(k) + ("" if fold(by_key[k].name) == k else f" ({by_key[k].name})")
             for k in suggestions]
    hint = f"; did you mean {' or '.join(shown)}?" if shown else ""
    raise UnknownSystemError(f"no system named {query!r}{hint}", query, suggestions)


def _contains_run(have: list[str], wanted: list[str]) -> bool:
    return any(have[i:i + len(wanted)] == wanted for i in range(len(have) - len(wanted) + 1))


def _describe(s: System) -> str:
    where = " ".join(str(x) for x in (s.venue, s.year) if x)
    return f"{s.name}, {where}" if where else s.name


def compare(names: Iterable[str], *, catalog: Catalog | None = None) -> Comparison:
    """Two or more entries side by side, one row per field of :data:`FIELDS`."""
    picked = list({s.key: s for s in (show(n, catalog=catalog) for n in names)}.values())
    if len(picked) < 2:
        raise CatalogError("compare needs at least two different systems, e.g. 'reef tgs'")
    rows = {field: tuple(field_value(s, field) for s in picked) for field in FIELDS}
    return Comparison(tuple(picked), rows)


def field_value(s: System, field: str) -> Any:
    """A field of :data:`FIELDS` or :data:`CSV_COLUMNS`, the derived ``area`` included, and
    ``origin``: where the facts come from, the seed file's name or the cited :class:`Source`."""
    if field == "area":
        return s.area
    if field == "origin":
        return s.source if s.source is not None else s.seed
    return getattr(s, field)


# -- export --------------------------------------------------------------------------------

def _resolve(systems: Iterable[System | Hit] | None, catalog: Catalog | None) -> list[System]:
    """Systems as given, accepting search hits too; every entry when none are given."""
    if systems is None:
        return _systems(catalog)
    return [item.system if isinstance(item, Hit) else item for item in systems]


def _flat(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, Source):
        return f"{value.kind.value}: {value.url}"
    if isinstance(value, dict):
        return "; ".join(f"{k}: {v}" for k, v in value.items())
    if isinstance(value, list):
        return "; ".join(f"{v.kind.value}: {v.url}" if hasattr(v, "url") else _flat(v)
                         for v in value)
    return str(value)


def export(systems: Iterable[System | Hit] | None = None, format: str = "json", *,
           catalog: Catalog | None = None) -> str:
    """Entries as text: JSON in the data file's own shape (``Catalog`` validates it
    back), or CSV with :data:`CSV_COLUMNS`, lists joined by "; " and links as "kind: url"."""
    chosen = _resolve(systems, catalog)
    fmt = fold(format or "").strip()
    if fmt == "json":
        return Catalog(systems=chosen).model_dump_json(indent=2) + "\n"
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(CSV_COLUMNS)
        for s in chosen:
            writer.writerow([_flat(field_value(s, column)) for column in CSV_COLUMNS])
        return out.getvalue()
    raise CatalogError(f"unknown export format {format!r}; choose from: "
                       + ", ".join(EXPORT_FORMATS))


def to_dataframe(systems: Iterable[System | Hit] | None = None, *,
                 catalog: Catalog | None = None):
    """A pandas DataFrame indexed by key (lists stay lists); pandas is optional,
    so it is imported only here."""
    try:
        import pandas as pd
    except ImportError as exc:
        raise ImportError("catalog.to_dataframe needs pandas, which is not installed; "
                          "install it with 'pip install pandas', or use "
                          "export(format='csv') instead") from exc
    records = []
    for s in _resolve(systems, catalog):
        record = s.model_dump(mode="json")
        record["area"] = s.area
        record["links"] = [f"{link.kind.value}: {link.url}" for link in s.links]
        record["source"] = _flat(s.source) or None
        records.append({column: record[column] for column in CSV_COLUMNS})
    return pd.DataFrame.from_records(records, columns=list(CSV_COLUMNS)).set_index("key")
