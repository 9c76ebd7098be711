# The probe report's type names every field the protocol document gives a
# report, so the type and docs/probe-protocol.md cannot drift apart; and the
# read boundary (`report_problem`) refuses what is not a report.
from __future__ import annotations

import re
from pathlib import Path
from typing import get_type_hints

import pytest

from faultlab.lab.process.probereport import ProbeReport, report_problem
from faultlab.probe import BOUNDARIES

DOC = Path(__file__).resolve().parents[4] / "docs" / "probe-protocol.md"


def _column(first_column: set[str], index: int) -> set[str]:
    """The backticked names in column `index` of the document's table rows
    whose first cell is one of `first_column` (a boundary or a fact)."""
    found: set[str] = set()
    for line in DOC.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > index and cells[0].strip("`") in first_column:
            found |= set(re.findall(r"`([A-Za-z]+)`", cells[index]))
    return found


def test_every_documented_boundary_fact_is_in_the_type() -> None:
    documented = _column(set(BOUNDARIES), -1)  # section 6: boundary, where, facts
    assert {"callId", "seq", "parentCallId", "digest", "file", "size"} <= documented
    assert documented - set(get_type_hints(ProbeReport)) == set()


def test_every_documented_fact_field_is_in_the_type() -> None:
    facts = {"create", "dirsync", "write", "fsync", "fsync-failed", "truncate", "cut", "flush",
             "model/input", "session/cancel"}  # fmt: skip
    documented = _column(facts, 1)  # section 3.2: fact, fields, reported
    assert {"file", "size", "offset", "bytes", "keptIn", "ok", "toolErrors"} <= documented
    # `callId`, `code`, `content` are the keys inside `toolErrors`' items.
    assert documented - set(get_type_hints(ProbeReport)) - {"code", "content"} == set()


@pytest.mark.parametrize(
    ("message", "problem"),
    [
        ([1], "a report must be a JSON object, not list"),
        ("x", "a report must be a JSON object, not str"),
        ({"boundary": 3, "n": 1}, "'boundary' must be a string, not 3"),
        ({"boundary": "no/such", "n": 1}, "unknown boundary 'no/such'"),
        ({"boundary": "tool/durable"}, "the tool/durable report has no occurrence number 'n'"),
        ({"boundary": "tool/durable", "n": 0}, "'n' must be a whole number >= 1, not 0"),
        ({"boundary": "tool/durable", "n": True}, "'n' must be a whole number >= 1, not True"),
    ],
)
def test_what_is_not_a_report_is_named(message: object, problem: str) -> None:
    found = report_problem(message)
    assert found is not None and problem in found


def test_a_report_and_a_fact_pass() -> None:
    assert report_problem({"boundary": "tool/durable", "n": 2, "callId": "c"}) is None
    assert report_problem({"fact": "fsync", "file": "/tmp/x", "size": 3}) is None
