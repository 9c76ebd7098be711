# `faultlab report merge`: join the reports of the shards of one run (or of
# runs over disjoint scenarios) into one report, as if one machine had run
# everything: summary.json, cases.jsonl in the unsharded order, junit.xml,
# report.md with the boundary x fault matrix, every failure's artifacts, and
# a run.json so that `faultlab replay` works on the merged report.
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from itertools import zip_longest
from pathlib import Path
from typing import Any

import orjson

from faultlab.lab.campaigns.explore import ExploreResult
from faultlab.lab.errors import LabUsageError
from faultlab.lab.oracle.case import Case, CaseResult
from faultlab.lab.oracle.codes import Violation
from faultlab.lab.report.html import REFERENCES, write_html
from faultlab.lab.report.shards import CopyBudget, ShardFiles, copy_tree, read_shard
from faultlab.lab.report.write import (
    RunInfo,
    building_report,
    dumps_json,
    junit_xml,
    markdown_report,
    replay_command,
)

__all__ = ["MergeResult", "merge_reports"]

# Options that must agree between the reports merged.
_SAME = ("target", "policy", "timeout", "spawn", "backend", "drive")


_Report = ShardFiles  # a shard, read and checked (shards.py)


@dataclass(frozen=True, slots=True)
class MergeResult:
    path: Path
    summary: dict[str, Any]

    @property
    def passed(self) -> bool:
        return bool(self.summary["passed"])


def _check_compatible(reports: list[_Report]) -> None:
    kinds = {r.kind for r in reports}
    if len(kinds) > 1:
        raise LabUsageError(f"cannot merge reports of different kinds: {', '.join(sorted(kinds))}")
    first = reports[0]
    for other in reports[1:]:
        for key in _SAME:
            if first.info.get(key) != other.info.get(key):
                raise LabUsageError(
                    f"{other.path} was run with {key} {other.info.get(key)!r}, "
                    f"{first.path} with {first.info.get(key)!r}: not shards of one run"
                )
    if first.kind == "fuzz":
        for key in ("seed", "examples", "faults", "streamSize"):
            if any(r.summary.get(key) != first.summary.get(key) for r in reports):
                raise LabUsageError(f"the fuzz reports differ in {key}: not shards of one campaign")


def _order(reports: list[_Report], partial: bool) -> list[_Report]:
    """Shards by K (complete unless `partial`), or unsharded reports as given."""
    shards = [r.shard for r in reports]
    if all(s is None for s in shards):
        return reports
    if any(s is None for s in shards):
        raise LabUsageError("cannot merge sharded and unsharded reports")
    counts = {s.count for s in shards if s is not None}
    if len(counts) > 1:
        raise LabUsageError(f"the shards come from different splits: N = {sorted(counts)}")
    (count,) = counts
    by_index: dict[int, _Report] = {}
    for report, shard in zip(reports, shards, strict=True):
        assert shard is not None
        if shard.index in by_index:
            raise LabUsageError(f"shard {shard} is given twice: {by_index[shard.index].path}, "
                                f"{report.path}")  # fmt: skip
        by_index[shard.index] = report
    missing = [f"{k}/{count}" for k in range(1, count + 1) if k not in by_index]
    if missing and not partial:
        raise LabUsageError(
            f"shard(s) {', '.join(missing)} missing: the merged report would be incomplete "
            "(--allow-partial merges anyway)"
        )
    return [by_index[k] for k in sorted(by_index)]


def _records(reports: list[_Report]) -> list[tuple[_Report, dict[str, Any]]]:
    if reports[0].kind == "fuzz":
        pairs = [(r, rec) for r in reports for rec in r.records]
        return sorted(pairs, key=lambda p: (p[1].get("stream", 0), p[1].get("example", 0)))
    if reports[0].shard is not None:  # case i went to shard (i mod N) + 1: interleave
        rows = zip_longest(*[[(r, rec) for rec in r.records] for r in reports])
        pairs = [pair for row in rows for pair in row if pair is not None]
    else:
        pairs = [(r, rec) for r in reports for rec in r.records]
    seen: set[str] = set()
    for _report, record in pairs:
        if record["id"] in seen:
            raise LabUsageError(f"case {record['id']} is in more than one report")
        seen.add(record["id"])
    return pairs


def _result(record: dict[str, Any]) -> CaseResult:
    violations = tuple(
        Violation(v["code"], v["message"], v.get("evidence") or {})
        for v in record.get("violations", [])
    )
    case = Case(record["scenario"], record["occurrence"], record["fault"])
    return CaseResult(case, record["verdict"], violations, float(record.get("seconds", 0.0)),
                      record.get("detail", ""), {})  # fmt: skip


def merge_reports(
    paths: list[Path], *, report_dir: Path, run_id: str, argv: tuple[str, ...],
    allow_partial: bool = False,
) -> MergeResult:  # fmt: skip
    """Merge the reports in `paths` into `report_dir/run_id`."""
    if not paths:
        raise LabUsageError("name at least one report directory to merge")
    reports = _order([read_shard(p) for p in paths], allow_partial)
    _check_compatible(reports)
    pairs = _records(reports)
    results = [_result(record) for _report, record in pairs]
    seconds = sum(float(r.summary.get("seconds", 0.0)) for r in reports)
    explored = ExploreResult(tuple(results), (), seconds, None)
    first = reports[0].info
    info = RunInfo(run_id, argv, tuple(first["target"]) if first.get("target") else None,
                   first.get("policy"), float(first.get("timeout", 60.0)),
                   first.get("spawn", "fork"), first.get("backend"),
                   first.get("drive", "classic"), dict(first.get("driveOptions", {})))  # fmt: skip
    with building_report(report_dir, info) as (building, final):
        with open(building / "cases.jsonl", "wb") as out:
            for (report, record), result in zip(pairs, results, strict=True):
                line = {**record, "run": run_id, "mergedFrom": report.summary.get("runId")}
                if report.kind != "fuzz":
                    line["replay"] = replay_command(result, final)
                out.write(orjson.dumps(line) + b"\n")
        budget = CopyBudget()  # regular files only, each and all bounded (shards.py)
        for report in reports:
            for folder in ("failures", REFERENCES):
                copy_tree(report.path / folder, building / folder, budget, root=report.path,
                          shard=report.given)  # fmt: skip
        summary = _summary(reports, pairs, explored, info, seconds)
        (building / "summary.json").write_bytes(dumps_json(summary))
        (building / "junit.xml").write_bytes(junit_xml(explored))
        (building / "report.md").write_text(
            markdown_report(explored, info, final) + _sources(reports), encoding="utf-8"
        )
        write_html(building, final=final)
    return MergeResult(final, summary)


def _summary(
    reports: list[_Report], pairs: list[tuple[_Report, dict[str, Any]]],
    explored: ExploreResult, info: RunInfo, seconds: float,
) -> dict[str, Any]:  # fmt: skip
    first = reports[0].summary
    summary: dict[str, Any] = {
        **info.to_json(),
        "python": first.get("python"),
        "seconds": round(seconds, 3),
        "shard": None,
        "cases": len(explored.results),
        "counts": explored.counts,
        "perFault": {fault: t.to_json() for fault, t in explored.per_fault.items()},
        "passed": explored.passed and all(r.summary.get("passed") for r in reports),
        "codes": dict(Counter(code for r in explored.results for code in r.codes)),
        "scenarios": sorted({rec["scenario"] for _r, rec in pairs}),
        "merged": [
            {"runId": r.summary.get("runId"), "shard": r.summary.get("shard"), "path": str(r.path)}
            for r in reports
        ],
    }
    if reports[0].kind == "fuzz":
        for key in ("seed", "examples", "streamSize", "faults", "checkDeterminism"):
            summary[key] = first.get(key)
        summary["kind"] = "fuzz"
        summary["streams"] = sorted(s for r in reports for s in r.summary.get("streams", []))
        summary["findings"] = [f for r in reports for f in r.summary.get("findings", [])]
        del summary["scenarios"]
    return summary


def _sources(reports: list[_Report]) -> str:
    lines = ["", "## Merged from", ""]
    for r in reports:
        shard = r.summary.get("shard")
        lines.append(f"- `{r.path}`" + (f" (shard {shard})" if shard else ""))
    return "\n".join(lines) + "\n"
