"""``python -m catalog`` in a subprocess: what it prints and its exit status."""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys

import pytest

import catalog
from catalog.models import Catalog
from tests.paths import PROJECT_ROOT

ROOT = PROJECT_ROOT

NEEDED = {"reef", "tgs", "rcuda", "orion", "virtai-orion"}
pytestmark = pytest.mark.skipif(
    not NEEDED <= {s.key for s in catalog.load().systems},
    reason="catalog/data/systems.json is not filled in yet")


def run(*args: str, columns: int = 200) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": str(columns), "TERM": "dumb"}
    env.pop("FORCE_COLOR", None)
    return subprocess.run([sys.executable, "-m", "catalog", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


def ok(*args: str, **kwargs) -> str:
    done = run(*args, **kwargs)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return done.stdout


def fails(*args: str) -> str:
    done = run(*args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stdout == "" and "Traceback" not in done.stderr
    return done.stderr


def test_no_command_lists_every_system():
    out = ok()
    for system in catalog.load().systems:
        assert system.key in out
    assert f"{len(catalog.load().systems)} systems" in out
    assert ok("list") == out


def test_list_sort_and_narrow_terminal():
    out = ok("list", "--sort", "name")
    assert out.index("REEF") < out.index("TGS")
    narrow = ok("list", columns=80)
    assert all(len(line) <= 80 for line in narrow.splitlines()) and "reef" in narrow


def test_search():
    out = ok("search", "politecnica")
    assert "rCUDA" in out and "Score" in out and "1 system" in out
    ranked = ok("search", "kernel", "preemption", "--limit", "1")
    assert "reef" in ranked and "1 system" in ranked


def test_show():
    out = ok("show", "REEF")
    assert "Microsecond-scale Preemption" in out
    assert "Relation to gpu-workbench (our note" in out
    assert "https://github.com/SJTU-IPADS/reef" in out
    assert "VirtAI Tech Orion" in ok("show", "VirtAI", "Tech", "Orion")


def test_compare():
    out = ok("compare", "reef", "tgs")
    header = next(line for line in out.splitlines() if "Field" in line)
    assert "REEF" in header and "TGS" in header


def test_filter():
    out = ok("filter", "--mechanism", "kernel-preemption", "--code")
    assert "reef" in out and "1 system" in out
    assert "no systems match" in ok("filter", "--category", "temporal-sharing", "--until", "2000")


def test_export_json_round_trips():
    text = ok("export", "--format", "json")
    assert Catalog.model_validate_json(text).systems == sorted(catalog.load().systems,
                                                               key=lambda s: s.key)


def test_export_csv_is_verbatim_and_filtered():
    text = ok("export", "--format", "csv", "--area", "sharing")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert text.startswith("key,name,title,venue,year,area,category,kind,")
    assert rows and all(row["area"] == "sharing" for row in rows)
    assert "│" not in text  # no table drawing around exported text


def test_export_to_a_file(tmp_path):
    target = tmp_path / "systems.csv"
    out = ok("export", "--format", "csv", "--output", str(target))
    assert out.startswith("wrote ") and target.read_text().startswith("key,name,")


def test_help_lists_the_commands():
    out = ok("-h")
    for command in ("list", "search", "show", "compare", "filter", "export"):
        assert f"python -m catalog {command}" in out
    assert "--mechanism M" in ok("filter", "--help")


@pytest.mark.parametrize("args, message", [
    (["serch", "x"], "unknown command 'serch'; did you mean 'search'?"),
    (["reef"], "did you mean 'show reef'?"),
    (["show", "reff"], "no system named 'reff'; did you mean 'reef'?"),
    (["show", "Orion"], "virtai-orion"),
    (["show"], "the following arguments are required: NAME"),
    (["compare", "reef"], "at least two different systems"),
    (["filter", "--category", "bogus"], "unknown category 'bogus'; choose from: rpc,"),
    (["filter", "--kind", "tool"], "choose from: research-system, product"),
    (["filter", "--since", "abc"], "invalid int value: 'abc'"),
    (["export", "--format", "xml"], "invalid choice: 'xml'"),
    (["export", "--output", "/nonexistent-dir/x.json"], "cannot write /nonexistent-dir/x.json"),
])
def test_bad_input_exits_2_with_a_message(args, message):
    assert message in fails(*args)
