# The report of a fuzz campaign, written atomically into `reports/<run-id>/`
# like an exploration's: summary.json (kind "fuzz"), cases.jsonl (one line per
# generated example, the failing one replaced by its shrunk form), junit.xml,
# report.md, run.json, and for every finding under failures/<slug>/: the
# scenario TOML, a standalone pytest regression test (no Hypothesis), the
# replay command, the violations and the case's logs and probe trace.
from __future__ import annotations

import re
import shlex
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

from faultlab.lab.campaigns.explore import ExploreResult, fault_tally
from faultlab.lab.campaigns.fuzz import Finding, FuzzResult
from faultlab.lab.oracle.case import Case, CaseResult
from faultlab.lab.oracle.codes import explain
from faultlab.lab.process.reference import slug
from faultlab.lab.report.html import write_html
from faultlab.lab.report.write import (
    RunInfo,
    building_report,
    dumps_json,
    fault_table,
    junit_xml,
    keep_artifacts,
)
from faultlab.scenario import dump_scenario

__all__ = ["finding_paths", "regression_test", "run_command", "write_fuzz_report"]

_TEST = '''\
"""Regression test written by `faultlab fuzz` (run {run_id}).

The smallest scenario the campaign found that breaks a guarantee, killed at
{occurrence} with {fault}: it found {codes}.  The test fails while the bug is
there and passes once it is fixed.  It needs faultlab and pytest only (no
Hypothesis); a --target command runs in the current directory:

    python -m pytest {file_name}
"""

from __future__ import annotations

from pathlib import Path

import pytest

from faultlab.lab import run_single

SCENARIO_NAME = {scenario_name!r}
SCENARIO = {scenario_text!r}
OCCURRENCE = {occurrence!r}
FAULT = {fault!r}
POLICY = {policy!r}
TARGET = {target!r}  # None: the reference runtime
CHECK_DETERMINISM = {check_determinism!r}
FOUND = {found!r}


def {function}(tmp_path: Path) -> None:
    scenario = tmp_path / SCENARIO_NAME
    scenario.write_text(SCENARIO, encoding="utf-8")
    result = run_single(
        str(scenario), OCCURRENCE, fault=FAULT, policy=POLICY, target=TARGET,
        workdir=tmp_path / "lab", check_determinism=CHECK_DETERMINISM,
    )
    evidence = [f"{{v.code}} [{{v.guarantee}}]: {{v.message}}" for v in result.violations]
    if not result.passed:
        lines = [f"{{result.case.id}}: {{result.verdict}}", *evidence]
        pytest.fail("\\n".join(lines), pytrace=False)
'''


def _identifier(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").lower()


def finding_paths(finding: Finding, run_dir: Path) -> tuple[Path, Path, Path]:
    """(directory, scenario file, regression test) of a finding in `run_dir`."""
    case = finding.result.case
    where = run_dir / "failures" / slug(case.id)
    name = Path(case.scenario).name
    parts = (Path(name).stem, case.occurrence, case.fault)
    test = "test_" + "_".join(_identifier(part) for part in parts) + ".py"
    return where, where / name, where / test


def run_command(case: Case, scenario_file: Path, info: RunInfo) -> str:
    """The `faultlab run` command that re-runs one case of a saved scenario."""
    argv = ["faultlab", "run", str(scenario_file), "--at", case.occurrence, "--fault", case.fault]
    if info.policy:
        argv += ["--policy", info.policy]
    if info.target:
        argv += ["--target", shlex.join(info.target)]
    return shlex.join(argv)


def regression_test(finding: Finding, info: RunInfo, file_name: str) -> str:
    case = finding.result.case
    return _TEST.format(
        run_id=info.run_id, occurrence=case.occurrence, fault=case.fault,
        codes=", ".join(finding.result.codes), file_name=file_name,
        scenario_name=Path(case.scenario).name,
        scenario_text=dump_scenario(finding.generated.scenario), policy=info.policy,
        target=shlex.join(info.target) if info.target else None,
        check_determinism="NONDETERMINISTIC" in finding.result.codes,
        found=list(finding.result.codes), function=f"test_{_identifier(case.id)}",
    )  # fmt: skip


def _with_scenario(result: CaseResult, scenario: str) -> CaseResult:
    case = Case(scenario, result.case.occurrence, result.case.fault)
    return CaseResult(case, result.verdict, result.violations, result.seconds, result.detail,
                      result.artifacts)  # fmt: skip


def _rows(result: FuzzResult, final: Path) -> list[tuple[CaseResult, dict[str, Any]]]:
    """One row per generated example; a stream's first failing example is
    replaced by the finding it shrank to."""
    findings = {f.stream: f for f in result.findings}
    rows = []
    for example in result.examples:
        extra: dict[str, Any] = {"stream": example.stream, "example": example.index}
        finding = findings.get(example.stream)
        if finding is not None and example.result is finding.first:
            _where, scenario, _test = finding_paths(finding, final)
            extra["shrunkFrom"] = example.result.case.id
            extra["shrunk"] = finding.shrunk
            rows.append((_with_scenario(finding.result, str(scenario)), extra))
        else:  # passing examples' scenario files are not kept: name only
            rows.append((_with_scenario(example.result, Path(example.result.case.scenario).name),
                         extra))  # fmt: skip
    return rows


def _matrix(rows: list[tuple[CaseResult, dict[str, Any]]]) -> list[str]:
    """Boundary x fault: examples that passed / failed there."""
    cells: dict[tuple[str, str], Counter[str]] = {}
    faults: list[str] = []
    for r, _extra in rows:
        if r.case.fault not in faults:
            faults.append(r.case.fault)
        boundary = r.case.occurrence.partition("#")[0]
        cells.setdefault((boundary, r.case.fault), Counter())["pass" if r.passed else "fail"] += 1
    lines = ["", "## Boundary x fault (examples passed / failed)", ""]
    lines.append("| boundary | " + " | ".join(faults) + " |")
    lines.append("|---|" + "---|" * len(faults))
    for boundary in sorted({b for b, _f in cells}):
        row = []
        for fault in faults:
            count = cells.get((boundary, fault))
            row.append(f"{count['pass']} / {count['fail']}" if count else "")
        lines.append(f"| {boundary} | " + " | ".join(row) + " |")
    return lines


def _markdown(result: FuzzResult, info: RunInfo, final: Path,
              rows: list[tuple[CaseResult, dict[str, Any]]]) -> str:  # fmt: skip
    s = result.settings
    lines = [f"# faultlab fuzz {info.run_id}", ""]
    lines.append(f"- command: `{shlex.join(info.argv)}`")
    lines.append(f"- target: {shlex.join(info.target) if info.target else 'reference runtime'}")
    lines.append(f"- policy: {info.policy or 'as each scenario says (semantic)'}")
    shard = f", shard {s.shard}" if s.shard else ""
    lines.append(f"- seed {s.seed}, {len(result.examples)} of {s.examples} example(s){shard}, "
                 f"faults {', '.join(s.faults)}")  # fmt: skip
    verdict = "all guarantees held" if result.passed else "VIOLATIONS FOUND"
    lines.append(f"- verdict: **{verdict}** in {result.seconds:.1f}s")
    lines += fault_table(fault_tally([r for r, _ in rows]))
    for finding in result.findings:
        where, scenario, test = finding_paths(finding, final)
        lines += ["", f"## Finding: `{finding.result.case.id}`", ""]
        lines.append(
            f"- shrunk in {finding.shrink_runs} run(s)" if finding.shrunk
            else "- not shrunk: the failure did not reproduce exactly (NONDETERMINISTIC)"
        )  # fmt: skip
        lines += [f"- `{v.code}` [{v.guarantee}]: {v.message}" for v in finding.result.violations]
        lines.append(f"- replay: `{run_command(finding.result.case, scenario, info)}`")
        lines.append(f"- regression test: `python -m pytest {test}`")
        lines.append(f"- artifacts: `{where.relative_to(final)}/`")
        lines += ["", "```toml", dump_scenario(finding.generated.scenario).rstrip(), "```"]
    codes = Counter(code for r, _ in rows for code in r.codes)
    if codes:
        lines += ["", "## Violations by code", ""]
        lines += [f"- `{code}` x{count}: {explain(code)}" for code, count in codes.most_common()]
    if rows:
        lines += _matrix(rows)
    return "\n".join(lines) + "\n"


def _finding_files(finding: Finding, info: RunInfo, building: Path, final: Path) -> None:
    where, scenario, test = finding_paths(finding, final)
    into = building / where.relative_to(final)
    into.mkdir(parents=True)
    source = finding.result.artifacts.get("dir")
    if source is not None:
        keep_artifacts(Path(source), into)  # bounded, never through a link
    (into / scenario.name).write_text(dump_scenario(finding.generated.scenario), "utf-8")
    (into / test.name).write_text(regression_test(finding, info, test.name), "utf-8")
    command = run_command(finding.result.case, scenario, info)
    (into / "replay.sh").write_text(command + "\n", encoding="utf-8")
    violations = [v.to_json() for v in finding.result.violations]
    (into / "violations.json").write_bytes(dumps_json(violations))


def write_fuzz_report(result: FuzzResult, info: RunInfo, report_dir: Path) -> Path:
    """Write the campaign's report; return its directory."""
    with building_report(report_dir, info, latest="latest-fuzz") as (building, final):
        rows = _rows(result, final)
        s = result.settings
        findings = []
        for finding in result.findings:
            _where, scenario, test = finding_paths(finding, final)
            findings.append({
                "id": finding.result.case.id, "codes": list(finding.result.codes),
                "toolCalls": finding.tool_calls, "shrunk": finding.shrunk,
                "shrinkRuns": finding.shrink_runs, "scenario": str(scenario),
                "regressionTest": str(test),
                "replay": run_command(finding.result.case, scenario, info),
                "firstFound": finding.first.case.id,
            })  # fmt: skip
        counts = dict(Counter(r.verdict for r, _ in rows))
        summary = {
            **info.to_json(), "kind": "fuzz", "python": sys.version.split()[0],
            "seconds": round(result.seconds, 3), "shard": str(s.shard) if s.shard else None,
            "seed": s.seed, "examples": s.examples, "streamSize": s.stream_size,
            "streams": list(result.streams), "faults": list(s.faults),
            "checkDeterminism": s.check_determinism, "complete": result.complete,
            "cases": len(rows), "counts": counts,
            "passed": result.passed, "codes": dict(Counter(c for r, _ in rows for c in r.codes)),
            "findings": findings,
            "perFault": {f: t.to_json() for f, t in fault_tally([r for r, _ in rows]).items()},
        }  # fmt: skip
        (building / "summary.json").write_bytes(dumps_json(summary))
        with open(building / "cases.jsonl", "wb") as out:
            for r, extra in rows:
                line = {**r.to_json(), **extra, "run": info.run_id, "artifacts": {}}
                if not r.passed and "shrunkFrom" in extra:
                    line["artifacts"] = {"dir": f"failures/{slug(r.case.id)}"}
                out.write(orjson.dumps(line) + b"\n")
        explored = ExploreResult(tuple(r for r, _ in rows), (), result.seconds, s.shard)
        (building / "junit.xml").write_bytes(junit_xml(explored))
        markdown = _markdown(result, info, final, rows)
        (building / "report.md").write_text(markdown, encoding="utf-8")
        for finding in result.findings:
            _finding_files(finding, info, building, final)
        write_html(building, final=final)
    return final
