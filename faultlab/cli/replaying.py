# The commands that go back to a fault-free run or a recorded case:
# `boundaries` (the dry run that lists the kill points) and `replay` (one
# case of a report again, with the drive that report names, built from the
# options its run.json kept).
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from faultlab.cli import options as opt
from faultlab.cli.output import EXIT_OK, EXIT_VIOLATIONS, UserError, emit_json, guarded, say

if TYPE_CHECKING:
    from faultlab.lab import CaseResult

__all__ = ["boundaries", "replay"]


@click.command(epilog=opt.epilog(
    'faultlab boundaries scenarios/payment.toml     # every kill point',
    'faultlab boundaries scenarios/chat.toml --json',
))
@click.argument("scenario", type=click.Path(path_type=Path))
@opt.policy
@opt.target
@opt.timeout
@opt.json
@opt.spawn
@opt.no_trace_cache
@opt.backend
@guarded
def boundaries(
    scenario: Path, policy: str | None, target: str | None, timeout: float, as_json: bool,
    spawn: str, backend: str | None,
) -> int:  # fmt: skip
    """Dry run: list every boundary occurrence the scenario reaches."""
    from faultlab import lab

    with lab.workdir() as work:
        reference = lab.reference_run(
            str(scenario),
            policy=policy,
            target=target,
            timeout=timeout,
            workdir=work,
            spawn=spawn,
            backend=backend,
        )
    if reference.bad_reports:
        say(f"faultlab: BAD_PROBE_REPORT: the target's probe report broke the protocol: "
            f"{reference.bad_reports[0]}")  # fmt: skip
        if as_json:
            emit_json({"occurrences": [], "error": reference.bad_reports[0]})
        return EXIT_VIOLATIONS
    if reference.returncode != 0:
        say(f"faultlab: the fault-free run exited with status {reference.returncode}:")
        say(reference.stderr.rstrip())
        if as_json:
            emit_json(
                {
                    "occurrences": [],
                    "error": reference.stderr.strip(),
                    "status": reference.returncode,
                }
            )
        return EXIT_VIOLATIONS
    occurrences = reference.occurrences
    for occurrence in occurrences:
        say(occurrence)
    missing = lab.check_coverage(reference.scenario, occurrences)
    for violation in missing:
        say(f"BOUNDARY_NOT_REACHED: {violation.message}")
    say(f"{len(occurrences)} occurrence(s)")
    if as_json:
        emit_json({"occurrences": occurrences, "notReached": [v.evidence for v in missing]})
    return EXIT_VIOLATIONS if missing else EXIT_OK


@click.command(epilog=opt.epilog(
    "faultlab replay 'payment.toml::tool/effect#1[sigkill]'",
    "faultlab replay 'payment.toml::tool/effect#1[sigkill]' --report-dir reports/RUN-ID",
))
@click.argument("case_id")
@opt.report_dir
@opt.json
@opt.spawn
@opt.no_trace_cache
@guarded
def replay(case_id: str, report_dir: Path, as_json: bool, spawn: str) -> int:
    """Re-run exactly one recorded case.

    --report-dir is a run's directory, or a reports directory (its newest run).
    """
    from faultlab import lab

    found = lab.find_case(report_dir, case_id)
    if found is None:
        known = lab.recorded_ids(report_dir)
        hint = f" (it has {len(known)} case(s), e.g. {known[0]})" if known else ""
        raise UserError(f"case {case_id!r} is not in {report_dir / 'latest'}{hint}")
    record, info = found
    name, options = lab.replay_drive(info, spawn=spawn)
    with lab.workdir() as work:
        made = lab.make_drive(name, workdir=work, timeout=info.get("timeout", 60.0), **options)
        result = lab.run_case(made, record["scenario"], record["occurrence"],
                              fault=record["fault"])  # fmt: skip
    return _said_replay(case_id, record, result, as_json)


def _said_replay(case_id: str, record: dict[str, Any], result: CaseResult, as_json: bool) -> int:
    same = result.verdict == record["verdict"] and list(result.codes) == record["codes"]
    say(
        f"case {case_id}: {result.verdict.upper()} {list(result.codes)}; recorded "
        f"{record['verdict'].upper()} {record['codes']}: "
        + ("same verdict" if same else "DIFFERENT verdict")
    )
    for violation in result.violations:
        say(f"  {violation.code}: {violation.message}")
    if as_json:
        emit_json({**result.to_json(), "sameAsRecorded": same})
    return EXIT_OK if result.passed else EXIT_VIOLATIONS
