# What a run's report says, apart from where it is written: how the run was
# invoked (`RunInfo`, enough to replay any case), the replay command of a case,
# and the rendering of report.md and junit.xml with the summaries they share
# (crash cases per fault, boundary x fault, ground truth, unsupported faults,
# which artifacts show a failure).  faultlab/lab/report/write.py writes them.
from __future__ import annotations

import secrets
import shlex
import time
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from faultlab.lab.campaigns.explore import ExploreResult, FaultTally
from faultlab.lab.oracle.case import CaseResult
from faultlab.lab.oracle.codes import explain
from faultlab.lab.process.reference import NOT_TRACED, slug
from faultlab.lab.report.console import where_to_look
from faultlab.lab.report.serverjudged import judged_on_servers, server_files, server_ground_truth

__all__ = [
    "RunInfo",
    "dumps_json",
    "fault_table",
    "ground_truth_line",
    "ground_truths",
    "junit_xml",
    "look_at",
    "markdown_report",
    "new_run_id",
    "replay_command",
    "unsupported_faults",
]


@dataclass(frozen=True, slots=True)
class RunInfo:
    """How a run was invoked: enough to replay any of its cases."""

    run_id: str
    argv: tuple[str, ...]
    target: tuple[str, ...] | None  # None: the reference runtime
    policy: str | None
    timeout: float
    spawn: str = "fork"
    backend: str | None = None  # --backend (None: each scenario's own)
    drive: str = "classic"  # classic, acp, agent or app (faultlab/lab/drives/)
    # The drive's own options (Drive.run_options), to build it again for a replay.
    options: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "runId": self.run_id,
            "argv": list(self.argv),
            "target": list(self.target) if self.target else None,
            "policy": self.policy,
            "timeout": self.timeout,
            "spawn": self.spawn,
            "backend": self.backend,
            "drive": self.drive,
            "driveOptions": self.options,
        }


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


def replay_command(result: CaseResult, run_dir: Path) -> str:
    """The command that re-runs `result`'s case from the report in `run_dir`."""
    return shlex.join(["faultlab", "replay", result.case.id, "--report-dir", str(run_dir)])


def dumps_json(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)


def junit_xml(result: ExploreResult) -> bytes:
    failures = sum(1 for r in result.results if r.verdict in ("fail", "drift"))
    errors = sum(1 for r in result.results if r.verdict in ("hung", "error"))
    skipped = len(result.unsupported)
    suites = ET.Element("testsuites")
    suite = ET.SubElement(
        suites, "testsuite", name="faultlab", tests=str(len(result.results)),
        failures=str(failures), errors=str(errors), skipped=str(skipped),
        time=f"{result.seconds:.3f}",
    )  # fmt: skip
    for case_result in result.results:
        case = case_result.case
        testcase = ET.SubElement(
            suite, "testcase", classname=Path(case.scenario).name,
            name=f"{case.occurrence}[{case.fault}]", time=f"{case_result.seconds:.3f}",
        )  # fmt: skip
        if case_result.passed:
            continue
        if case_result.verdict == "unsupported":
            ET.SubElement(testcase, "skipped", message=f"unsupported: {case_result.detail}")
            continue
        tag = "failure" if case_result.verdict in ("fail", "drift") else "error"
        element = ET.SubElement(
            testcase, tag, message=" ".join(case_result.codes) or case_result.verdict,
            type=case_result.codes[0] if case_result.codes else case_result.verdict,
        )  # fmt: skip
        element.text = "\n".join(f"{v.code}: {v.message}" for v in case_result.violations)
    ET.indent(suites)
    xml: bytes = ET.tostring(suites, encoding="utf-8", xml_declaration=True)
    return xml + b"\n"


def markdown_report(result: ExploreResult, info: RunInfo, report_dir: Path) -> str:
    lines = [f"# faultlab run {info.run_id}", ""]
    lines.append(f"- command: `{shlex.join(info.argv)}`")
    lines.append(f"- target: {shlex.join(info.target) if info.target else 'reference runtime'}")
    lines.append(f"- policy: {info.policy or 'as each scenario says'}")
    lines.append(f"- backend: {info.backend or 'as each scenario says'}")
    lines.append(f"- {ground_truth_line(result)}")
    verdict = "all guarantees held" if result.passed else "VIOLATIONS FOUND"
    lines.append(f"- verdict: **{verdict}** in {result.seconds:.1f}s")
    if not result.complete:
        lines.append(f"- **INCOMPLETE**: interrupted after {len(result.results)} of "
                     f"{result.planned} case(s); the rest did not run")  # fmt: skip
    lines += [
        "",
        "| scenario | cases | pass | fail | drift | hung | error | unsupported |",
        "|---|---|---|---|---|---|---|---|",
    ]
    per: dict[str, Counter[str]] = {}
    for r in result.results:
        per.setdefault(Path(r.case.scenario).name, Counter())[r.verdict] += 1
    for name, counts in [*per.items(), ("**total**", sum(per.values(), Counter()))]:
        row = [str(counts[v]) for v in ("pass", "fail", "drift", "hung", "error", "unsupported")]
        lines.append(f"| {name} | {sum(counts.values())} | " + " | ".join(row) + " |")
    lines += fault_table(result.per_fault)
    lines += _matrix(result)
    lines += _unsupported(result)
    codes = Counter(code for r in result.results for code in r.codes)
    if codes:
        lines += ["", "## Violations by code", ""]
        lines += [f"- `{code}` x{count}: {explain(code)}" for code, count in codes.most_common()]
        lines += ["", "## Failing cases", ""]
        for r in result.results:
            if not r.failed:
                continue
            lines.append(f"### `{r.case.id}` ({r.verdict})")
            lines += [f"- `{v.code}`: {v.message}" for v in r.violations]
            for v in r.violations:
                output = v.evidence.get("output")
                if isinstance(output, str) and output:
                    fence = "~~~~" if "~~~" in output else "~~~"
                    lines += [f"- output of the failed run (`{v.code}`):", "", fence, output,
                              fence, ""]  # fmt: skip
            lines.append(f"- replay: `{replay_command(r, report_dir)}`")
            lines.append(f"- artifacts: `failures/{slug(r.case.id)}/`; the problem shows in "
                         + ", ".join(f"`{name}`" for name in look_at(r)))  # fmt: skip
            lines.append("")
    return "\n".join(lines) + "\n"


def look_at(result: CaseResult) -> list[str]:
    """The artifacts of a failing case that show its problems, most telling
    first (the crashed log for a loss; the world ledger and the final log
    for a duplicated effect)."""
    if judged_on_servers(result):  # a black-box case: the files its folder holds
        return server_files(result, result.codes)
    if "dir" not in result.artifacts:
        return ["violations.json"]  # no kept directory: the folder holds its violations
    folder = Path(result.artifacts["dir"])
    names = [name for code in result.codes
             for name in where_to_look(code, folder)] or ["violations.json"]  # fmt: skip
    return list(dict.fromkeys(names))


def fault_table(per_fault: Mapping[str, FaultTally]) -> list[str]:
    """Markdown: crash cases that ran per fault, and those that could not."""
    lines = ["", "## Crash cases per fault", "", "| fault | ran | unsupported |", "|---|---|---|"]
    lines += [f"| {fault} | {t.ran} | {t.unsupported} |" for fault, t in per_fault.items()]
    return lines if per_fault else [*lines[:3], "No crash case ran."]


_MARK = {
    "pass": "ok", "fail": "FAIL", "drift": "drift", "hung": "hung", "error": "error",
    "unsupported": "unsupported",
}  # fmt: skip


def ground_truths(result: ExploreResult) -> list[dict[str, str]]:
    """Per scenario, where the file facts of its power-loss states came from:
    "syscalls" (the reference run's strace) or "facts" (the target's own
    reports, with why)."""
    return [
        {
            "scenario": Path(ref.scenario_path).name,
            "groundTruth": ref.ground_truth,
            "note": ref.ground_truth_note,
        }
        for ref in result.references
    ]


def ground_truth_line(result: ExploreResult) -> str:
    """One line for people: which ground truth the run used, per scenario count."""
    every = ground_truths(result)
    served = sum(1 for g in every if g["groundTruth"] == "servers")
    if served and served == len(every):  # black-box agents: no session log is traced
        return f"ground truth: {server_ground_truth(served)}"
    listed = [g for g in every if g["note"] != NOT_TRACED]
    if every and not listed:
        return f"ground truth: no file facts needed ({NOT_TRACED})"
    traced = sum(1 for g in listed if g["groundTruth"] == "syscalls")
    text = f"ground truth: system calls (strace) for {traced} of {len(listed)} scenario(s)"
    cached = sum(1 for ref in result.references if getattr(ref, "trace_cached", False))
    if cached:  # served from the cache of traced runs (faultlab/lab/process/tracecache.py)
        text += f" ({cached} from the trace cache of an earlier run)"
    notes = sorted(
        {g["note"] or "not traced" for g in listed if g["groundTruth"] not in ("syscalls",
                                                                              "servers")}
    )
    if notes:
        text += "; the target's own file facts for the rest: " + "; ".join(notes)
    if served:
        text += f"; {server_ground_truth(served)}"
    return text


def unsupported_faults(result: ExploreResult) -> list[dict[str, str]]:
    """The faults that could not run, per scenario, with the reason."""
    return [
        {"scenario": Path(r.case.scenario).name, "fault": r.case.fault, "reason": r.detail}
        for r in result.unsupported
    ]


def _unsupported(result: ExploreResult) -> list[str]:
    listed = unsupported_faults(result)
    if not listed:
        return []
    lines = ["", "## Unsupported faults (not run, not passed)", ""]
    lines += [f"- `{u['fault']}` on {u['scenario']}: {u['reason']}" for u in listed]
    return lines


def _matrix(result: ExploreResult) -> list[str]:
    """Boundary occurrence x fault, the verdict in each cell ('' = not applicable)."""
    faults: list[str] = []
    rows: dict[tuple[str, str], dict[str, str]] = {}
    for r in result.results:
        if r.case.occurrence == "coverage":
            continue
        if r.case.fault not in faults:
            faults.append(r.case.fault)
        row = rows.setdefault((Path(r.case.scenario).name, r.case.occurrence), {})
        row[r.case.fault] = _MARK[r.verdict]
    if not rows:
        return []
    lines = [
        "",
        "## Boundary x fault",
        "",
        "| scenario | occurrence | " + " | ".join(faults) + " |",
    ]
    lines.append("|---|---|" + "---|" * len(faults))
    for (scenario, occurrence), row in rows.items():
        cells = " | ".join(row.get(fault, "") for fault in faults)
        lines.append(f"| {scenario} | {occurrence} | {cells} |")
    return lines
