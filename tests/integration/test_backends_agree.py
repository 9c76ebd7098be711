# The same scenario killed at the same boundary recovers the same way on
# every backend: for every boundary occurrence of three bundled scenarios,
# SIGKILL on JSONL and on SQLite (fork spawn mode) gives the same repaired
# event sequence (seqs, types, repair classes, and the events themselves,
# times aside), and the oracle passes both.  The one documented difference is
# flush/written (the batch is handed to the store, not yet durable): JSONL's
# bytes are in the page cache and survive a SIGKILL, SQLite's transaction was
# never committed and does not; there SQLite's crashed log must be exactly
# JSONL's without that batch (docs/backends.md).
from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from faultlab.lab.faults.sigkill import run_case
from faultlab.lab.oracle.case import Case
from faultlab.lab.process.reference import LabOptions, Reference, run_reference
from faultlab.lab.process.target import reference_target
from faultlab.lab.read.stores import read_any
from faultlab.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ("payment.toml", "deploy-careful.toml", "mixed-parallel.toml")
pytestmark = pytest.mark.realprocess

Row = tuple[int, str, str | None, bytes]


def rows(path: str) -> list[Row]:
    view = read_any(path)
    assert not view.problems, view.problems
    return [
        (
            e.seq,
            e.type,
            (e.data.get("error") or {}).get("code") if e.type == "tool/result" else None,
            orjson.dumps(e.data, option=orjson.OPT_SORT_KEYS),
        )
        for e in view.events
    ]


def boundaries(reference: Reference) -> list[dict[str, Any]]:
    volatile = {"file", "size", "first", "last"}
    return [{k: v for k, v in m.items() if k not in volatile} for m in reference.boundaries]


@pytest.mark.parametrize("name", SCENARIOS)
def test_every_boundary_repairs_the_same_on_jsonl_and_sqlite(tmp_path: Path, name: str) -> None:
    path = str(ROOT / "scenarios" / name)
    scenario = load_scenario(path)
    options = {
        backend: LabOptions(reference_target(backend=backend), tmp_path / backend, spawn="fork")
        for backend in ("jsonl", "sqlite")
    }
    refs = {b: run_reference(path, scenario, o) for b, o in options.items()}
    assert refs["jsonl"].returncode == refs["sqlite"].returncode == 0
    assert refs["sqlite"].backend == "sqlite"
    assert boundaries(refs["jsonl"]) == boundaries(refs["sqlite"])
    logs = {b: [(e.seq, e.type) for e in ref.log.events] for b, ref in refs.items()}
    assert logs["jsonl"] == logs["sqlite"] and logs["jsonl"]
    written = {m["n"]: m for m in refs["sqlite"].boundaries if m["boundary"] == "flush/written"}
    compared = 0
    for occurrence in refs["jsonl"].occurrences:
        results = {
            b: run_case(Case(path, occurrence), refs[b], options[b]) for b in ("jsonl", "sqlite")
        }
        for backend, result in results.items():
            assert result.passed, (backend, occurrence, result.violations)
        jsonl, sqlite = (rows(results[b].artifacts["repaired"]) for b in ("jsonl", "sqlite"))
        boundary, _, n = occurrence.partition("#")
        if boundary != "flush/written":
            assert sqlite == jsonl, occurrence
        else:
            crashed = {b: rows(results[b].artifacts["crashed"]) for b in ("jsonl", "sqlite")}
            first = written[int(n)]["first"]
            assert crashed["sqlite"] == crashed["jsonl"][:first], occurrence
            assert len(crashed["jsonl"]) == written[int(n)]["last"] + 1
        compared += 1
    assert compared == len(refs["sqlite"].occurrences) >= 25
