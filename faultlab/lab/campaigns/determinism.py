# The determinism check: run a case a second time (its fault-free reference
# run too) and compare what both runs left behind: every log (crashed,
# repaired, final, the session file), the world ledger, the probe trace and
# the verdict, with times, paths and byte counts normalised.  A difference
# is a `NONDETERMINISTIC` violation naming the first differing file and line:
# a failure that does not reproduce cannot be shrunk or replayed, so it is
# reported as such instead of being left for Hypothesis to call flaky.
from __future__ import annotations

import dataclasses
import re
import shutil
from pathlib import Path
from typing import Any

import orjson

from faultlab.lab.drives.classic import run_one
from faultlab.lab.oracle.case import Case, CaseResult
from faultlab.lab.oracle.codes import Violation
from faultlab.lab.process.drift import normalized
from faultlab.lab.process.reference import LabOptions, Reference, run_reference
from faultlab.lab.read.sqlite import render_jsonl
from faultlab.userfiles import read_target

__all__ = ["NONDETERMINISTIC", "check_determinism", "normalise_lines"]

NONDETERMINISTIC = "NONDETERMINISTIC"
# Values that differ between two faithful runs: wall-clock times.  (Paths and
# byte counts are dropped by `normalized` in process/reference.py; ids are
# derived from the script, the session id is fixed by the lab.)
_TIMES = frozenset({"time", "createdAt"})
# A SQLite database holds its times as binary REALs (the event rows' and the
# header's): its bytes differ between two faithful runs.  Each SQLite
# artifact has a `.dump.jsonl` beside it, compared normalised instead.
_SKIPPED_SUFFIXES = (
    ".stderr", ".lock", ".tmp", ".sqlite", ".sqlite-wal", ".sqlite-shm", ".sqlite-journal",
)
# A torn line is not JSON and ends wherever the tear fell; where that is (the
# middle of a line) moves with the width of the times before it, and so do
# the byte offsets in a torn state's label and in the `.cut-<offset>` name of
# a preserved tail.  Two faithful runs agree on which seq was torn, not on
# its bytes: a torn line is compared by its seq alone, offsets not at all.
_TORN_SEQ = re.compile(rb'^\{"seq":([0-9]+)')
_OFFSET = re.compile(rb"torn@[0-9]+")
_CUT_NAME = re.compile(r"\.cut-[0-9]+")


def _normal(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in normalized(value).items() if k not in _TIMES}
    if isinstance(value, list):
        return [_normal(item) for item in value]
    return value


def normalise_lines(data: bytes) -> list[bytes]:
    """Lines of a JSONL file with times, paths and sizes removed (others kept raw)."""
    lines = []
    for line in data.split(b"\n"):
        line = _OFFSET.sub(b"torn@N", line)
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            seq = _TORN_SEQ.match(line)
            lines.append(b"<torn seq " + seq.group(1) + b">" if seq else line)
            continue
        lines.append(orjson.dumps(_normal(value), option=orjson.OPT_SORT_KEYS))
    return lines


def _snapshot(directory: Path | None) -> dict[str, list[bytes]]:
    if directory is None or not directory.is_dir():
        return {}
    files = {}
    for path in sorted(directory.rglob("*")):
        if path.is_file() and not path.name.endswith(_SKIPPED_SUFFIXES):
            name = _CUT_NAME.sub(".cut-N", str(path.relative_to(directory)))
            files[name] = normalise_lines(read_target(path, what="file a target wrote") or b"")
    return files


def _reference_files(reference: Reference) -> dict[str, list[bytes]]:
    trace = b"\n".join(orjson.dumps(m) for m in reference.trace)
    ledger = b"\n".join(orjson.dumps(r) for r in reference.ledger)
    # A SQLite log is compared as the lab reader's JSONL rendering of it.
    log = render_jsonl(reference.log) if reference.backend == "sqlite" else reference.log_bytes
    return {
        "reference log": normalise_lines(log),
        "reference trace": normalise_lines(trace),
        "reference ledger": normalise_lines(ledger),
    }


def _first_difference(
    first: dict[str, list[bytes]], second: dict[str, list[bytes]]
) -> dict[str, Any] | None:
    for name in sorted(set(first) | set(second)):
        if name not in first or name not in second:
            return {"file": name, "problem": "only one run left this file"}
        a, b = first[name], second[name]
        for line, (x, y) in enumerate(zip(a, b, strict=False), start=1):
            if x != y:
                return {"file": name, "line": line, "first": x.decode(errors="replace"),
                        "second": y.decode(errors="replace")}  # fmt: skip
        if len(a) != len(b):
            return {"file": name, "problem": f"{len(a)} line(s) vs {len(b)}"}
    return None


def check_determinism(
    case: Case, reference: Reference, first: CaseResult, options: LabOptions, *, workdir: Path
) -> Violation | None:
    """Run `case` (and its reference) again in `workdir`; None when both runs
    match `first` and `reference`, else a NONDETERMINISTIC violation."""
    before = {**_reference_files(reference), **_snapshot(_case_dir(first))}
    shutil.rmtree(workdir, ignore_errors=True)
    # traced anew, never from the cache: the point is a second real run
    again_options = dataclasses.replace(options, workdir=workdir, trace_cache=False)
    reference_again = run_reference(reference.scenario_path, reference.scenario, again_options)
    second = run_one(case, reference_again, again_options)
    after = {**_reference_files(reference_again), **_snapshot(_case_dir(second))}
    difference = _first_difference(before, after)
    if difference is None and (first.verdict, first.codes) != (second.verdict, second.codes):
        difference = {
            "problem": "different verdicts",
            "first": f"{first.verdict} {list(first.codes)}",
            "second": f"{second.verdict} {list(second.codes)}",
        }
    if difference is None:
        return None
    where = str(difference.get("file", "verdict"))
    if "line" in difference:
        where += f" line {difference['line']}"
    detail = difference.get("problem") or f"{difference['first']} vs {difference['second']}"
    return Violation(
        NONDETERMINISTIC,
        f"two runs of {case.id} differ in {where}: {detail}",
        {**difference, "firstVerdict": first.verdict, "secondVerdict": second.verdict},
    )


def _case_dir(result: CaseResult) -> Path | None:
    return Path(result.artifacts["dir"]) if "dir" in result.artifacts else None
