# Reports of a lab run, written atomically into `reports/<run-id>/` (built in
# a temp directory, then renamed), with `reports/latest` pointing at the
# newest: summary.json, cases.jsonl, junit.xml, report.md, and for every
# failing case its crashed/repaired/final logs, probe trace, stderr of each
# child, the replay command and a standalone repro.py.  An interrupted run's
# report says so (`"complete": false`); where reports go is checked before a
# run starts (`check_report_dir`), and a written report is read back here
# (`find_case`, `recorded_ids`).  What report.md and junit.xml say is
# faultlab/lab/report/render.py.
from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

from faultlab.lab.campaigns.explore import ExploreResult
from faultlab.lab.errors import LabUsageError
from faultlab.lab.oracle.case import CaseResult
from faultlab.lab.process.reference import slug
from faultlab.lab.process.target import LEDGER_NAME
from faultlab.lab.report.html import REFERENCES, write_html
from faultlab.lab.report.render import (
    RunInfo,
    dumps_json,
    fault_table,
    ground_truth_line,
    ground_truths,
    junit_xml,
    look_at,
    markdown_report,
    new_run_id,
    replay_command,
    unsupported_faults,
)
from faultlab.lab.report.shards import ReportMissing, read_shard
from faultlab.userfiles import (
    TAIL_BYTES,
    TARGET_OUTPUT_TOO_LARGE,
    TargetFileError,
    copy_target,
    read_tail,
)

__all__ = [
    "RunInfo",
    "building_report",
    "check_report_dir",
    "dumps_json",
    "fault_table",
    "find_case",
    "ground_truth_line",
    "ground_truths",
    "junit_xml",
    "keep_artifacts",
    "look_at",
    "markdown_report",
    "new_run_id",
    "recorded_ids",
    "replay_command",
    "unsupported_faults",
    "write_report",
]


# One template for both kinds of case: {runner} is the lab function, {call}
# its arguments after the scenario, the occurrence and the fault.
_REPRO = '''\
"""Reproduce faultlab case {case_id!r} with only faultlab{needs} installed.

Run: python repro.py   (exit 0 when the same violations are found again)
"""
import sys
import tempfile
from pathlib import Path

from faultlab.lab import {runner}

SCENARIO = {scenario_text!r}
EXPECTED = {codes!r}

with tempfile.TemporaryDirectory() as work:
    scenario = Path(work) / {scenario_name!r}
    scenario.write_text(SCENARIO, encoding="utf-8")
    result = {runner}(str(scenario), {occurrence!r}, fault={fault!r}, {call}
                        workdir=Path(work) / "lab")
    print(result.verdict, list(result.codes))
    sys.exit(0 if list(result.codes) == EXPECTED else 1)
'''


def _keep(item: Path, into: Path) -> None:
    """Copy one file of a case's directory into its report folder, bounded
    and never through a link (a case's directory holds what its target
    wrote too): a child's output over the limit keeps its tail, anything
    else refused leaves a note saying why."""
    try:
        copy_target(item, into / item.name, what="case file")
    except TargetFileError as refused:
        if refused.code == TARGET_OUTPUT_TOO_LARGE and item.suffix in (".stdout", ".stderr"):
            note = f"[faultlab: {refused.problem}; its last {TAIL_BYTES} bytes]\n".encode()
            (into / item.name).write_bytes(note + read_tail(item, limit=TAIL_BYTES))
        else:
            (into / f"{item.name}.refused.txt").write_text(refused.problem + "\n", "utf-8")


def keep_artifacts(source: Path, into: Path) -> None:
    """The files at the top of a case's directory `source`, into `into`."""
    if source.is_dir() and not source.is_symlink():
        for item in sorted(source.iterdir()):
            if not item.is_dir():
                _keep(item, into)


def _failure_artifacts(result: CaseResult, into: Path, info: RunInfo, report_dir: Path) -> None:
    into.mkdir(parents=True)
    source = Path(result.artifacts["dir"]) if "dir" in result.artifacts else None
    if source is not None and source.is_dir():
        keep_artifacts(source, into)
        # The world ledger (what the tools really applied) beside the logs: it
        # is where a duplicated effect shows.
        ledger = source / "session" / LEDGER_NAME
        if os.path.lexists(ledger):
            _keep(ledger, into)
    (into / "replay.sh").write_text(replay_command(result, report_dir) + "\n", encoding="utf-8")
    (into / "violations.json").write_bytes(dumps_json([v.to_json() for v in result.violations]))
    try:
        scenario_text = Path(result.case.scenario).read_text("utf-8")
    except OSError:
        return
    if info.drive == "agent":  # a black-box case: the same agent, unmodified
        runner, needs = "run_agent_case", " and the agent"
        call = f"agent={(info.target or ('reference',))[0]!r},"
    elif info.drive == "app":  # a framework app's case: run where its module imports
        runner, needs = "run_app_single", ", the framework and the app's module"
        call = f"app={(info.target or ('',))[0]!r},"
    else:
        runner, needs = "run_single", ""
        call = (f"policy={info.policy!r}, target={list(info.target) if info.target else None!r},"
                f" backend={info.backend!r}, drive={info.drive!r},")  # fmt: skip
    repro = _REPRO.format(
        case_id=result.case.id, scenario_text=scenario_text, codes=list(result.codes),
        scenario_name=Path(result.case.scenario).name, occurrence=result.case.occurrence,
        fault=result.case.fault, runner=runner, needs=needs, call=call,
    )  # fmt: skip
    (into / "repro.py").write_text(repro, encoding="utf-8")


@contextlib.contextmanager
def building_report(
    report_dir: Path, info: RunInfo, *, latest: str = "latest"
) -> Iterator[tuple[Path, Path]]:
    """Build a run's report in a hidden directory next to where it goes:
    yields (building, final).  Afterwards `run.json` is written, the directory
    takes its final name at once and `latest` (explorations; `latest-fuzz`
    for fuzz campaigns) points at it, so a reader never sees half a report."""
    report_dir.mkdir(parents=True, exist_ok=True)
    final = report_dir.resolve() / info.run_id
    building = report_dir / f".{info.run_id}.tmp"
    shutil.rmtree(building, ignore_errors=True)
    building.mkdir()
    try:
        yield building, final
        (building / "run.json").write_bytes(dumps_json(info.to_json()))
        os.replace(building, final)
    except BaseException:  # a half-built report is never left behind
        shutil.rmtree(building, ignore_errors=True)
        raise
    _point_latest(report_dir, info.run_id, latest)


def check_report_dir(report_dir: Path | str) -> Path:
    """Where reports go, checked before a run starts: not empty, every
    existing part of it a directory, and writable (tried, so a read-only
    mount is caught as well as a permission).  Creates it."""
    if str(report_dir).strip() == "":
        raise LabUsageError("--report-dir is empty: name a directory (default: reports)")
    path = Path(report_dir)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise LabUsageError(f"--report-dir {path}: exists and is not a directory") from None
    except NotADirectoryError:
        raise LabUsageError(f"--report-dir {path}: a part of it is a file, not a directory") \
            from None
    except OSError as exc:
        raise LabUsageError(f"--report-dir {path}: cannot be created: {exc.strerror}") \
            from None
    if not path.is_dir():
        raise LabUsageError(f"--report-dir {path}: exists and is not a directory")
    try:
        fd, probe = tempfile.mkstemp(prefix=".faultlab-writable-", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise LabUsageError(f"--report-dir {path}: not writable: {exc.strerror}") from None
    return path


def write_report(result: ExploreResult, info: RunInfo, report_dir: Path) -> Path:
    """Write the run's report; return its directory."""
    with building_report(report_dir, info) as (building, final):
        summary = {
            **info.to_json(),
            "python": sys.version.split()[0],
            "seconds": round(result.seconds, 3),
            "shard": str(result.shard) if result.shard else None,
            # false: interrupted; "cases" finished of "planned"
            "complete": result.complete,
            "planned": len(result.results) if result.planned is None else result.planned,
            "cases": len(result.results),
            "counts": result.counts,
            "perFault": {fault: t.to_json() for fault, t in result.per_fault.items()},
            "passed": result.passed,
            "codes": dict(Counter(code for r in result.results for code in r.codes)),
            "unsupported": unsupported_faults(result),
            "groundTruth": ground_truths(result),
            "scenarios": sorted({r.case.scenario for r in result.results}),
        }
        (building / "summary.json").write_bytes(dumps_json(summary))
        with open(building / "cases.jsonl", "wb") as cases:
            for r in result.results:
                line = {**r.to_json(), "replay": replay_command(r, final), "run": info.run_id}
                line["artifacts"] = {"dir": f"failures/{slug(r.case.id)}"} if r.failed else {}
                if r.failed:
                    line["lookAt"] = look_at(r)
                cases.write(orjson.dumps(line) + b"\n")
        (building / "junit.xml").write_bytes(junit_xml(result))
        (building / "report.md").write_text(markdown_report(result, info, final), encoding="utf-8")
        for r in result.results:
            if r.failed:
                _failure_artifacts(r, building / "failures" / slug(r.case.id), info, final)
        _reference_ledgers(result, building)
        write_html(building, final=final)
    return final


def _reference_ledgers(result: ExploreResult, building: Path) -> None:
    """The fault-free run's world ledger per scenario, which report.html
    counts each failure's effects against."""
    if not result.references:
        return
    where = building / REFERENCES
    where.mkdir()
    for reference in result.references:
        name = Path(reference.scenario_path).name
        lines = b"".join(orjson.dumps(r) + b"\n" for r in reference.ledger)
        (where / f"{name}.ledger.jsonl").write_bytes(lines)


def _point_latest(report_dir: Path, run_id: str, name: str = "latest") -> None:
    link = report_dir / name
    temp = report_dir / f".{name}.{os.getpid()}"
    with contextlib.suppress(FileNotFoundError):
        temp.unlink()
    os.symlink(run_id, temp)
    os.replace(temp, link)


def _run_dir(report_dir: Path) -> Path:
    """A run's own directory, or the newest run of a reports directory."""
    return report_dir if (report_dir / "cases.jsonl").is_file() else report_dir / "latest"


def find_case(report_dir: Path, case_id: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The recorded case `case_id` (of a run directory, or the newest run), with its
    run's options; None when there is no report.  The report is read as
    untrusted input (shards.py): a broken one is a LabUsageError."""
    try:
        files = read_shard(_run_dir(report_dir))
    except ReportMissing:
        return None
    for record in files.records:
        if record["id"] == case_id:
            return record, files.info
    return None


def recorded_ids(report_dir: Path) -> Sequence[str]:
    try:
        return [str(record["id"]) for record in read_shard(_run_dir(report_dir)).records]
    except LabUsageError:
        return []
