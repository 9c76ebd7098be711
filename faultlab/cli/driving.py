# The one CLI path of every drive: which drive the options name, which of the
# drive's own options the user set (an option the drive does not take is
# refused by `faultlab.lab.make_drive`, exit 2), and how a run of any drive
# ends: its report (written whole even when interrupted), its summary, the
# never-green-on-nothing lines, one JSON document and the exit code.
from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from faultlab.cli import show
from faultlab.cli.output import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_VIOLATIONS,
    UserError,
    emit_json,
    held_signals,
    say,
)

if TYPE_CHECKING:
    from faultlab.lab import CaseResult, Drive, ExploreResult, Style

__all__ = ["describe", "drive_name", "finish", "given_options"]

# keyword -> the parameter that sets it, where the names differ
_PARAMETERS = {"max_double": "max_double_cases"}


def drive_name(*, drive: str, agent: str | None, app: str | None) -> str:
    """--app names the app drive, --agent the agent drive, else --drive."""
    if agent is not None and app is not None:
        raise UserError("--agent and --app each name the target: give one")
    chosen = "app" if app is not None else "agent" if agent is not None else None
    if chosen is not None and drive != "classic":
        raise UserError(f"--drive {drive} does not apply to the {chosen} drive "
                        f"(--{chosen} names the target)")  # fmt: skip
    return chosen or drive


def given_options(ctx: click.Context, drive: str, **values: Any) -> dict[str, Any]:
    """The drive options the user set on the command line (or in the
    environment); left at their defaults they are not passed, so a drive
    refuses only what was asked of it."""
    given = {}
    for key, value in values.items():
        source = ctx.get_parameter_source(_PARAMETERS.get(key, key))
        if source in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT):
            given[key] = value if value is not False else None
    return {key: value for key, value in given.items() if value is not None}


def describe(drive: Drive, given: dict[str, Any]) -> str:
    """The target of a run, in words, for its first line."""
    if drive.name == "agent":
        return f"the agent {given['agent']}"
    if drive.name == "app":
        modes = drive.run_options()["modes"]
        return f"the app {given['app']} ({', '.join(modes)})"
    what = f"the target {given['target']}" if "target" in given else "the reference runtime"
    return what + (", driven over ACP" if drive.name == "acp" else "")


def finish(
    result: ExploreResult, drive: Drive, given: dict[str, Any], *, timeout: float,
    as_json: bool, report_dir: Path | None, verbosity: int = 0, paint: Style | None = None,
) -> int:  # fmt: skip
    """Report, summary and exit code of an exploration or fuzz run of `drive`."""
    from faultlab import lab

    report = None
    with held_signals():  # an interrupted run's report is written whole
        if report_dir is not None:
            options = drive.run_options()
            target = options.get("target") or ([given[drive.name]] if drive.name in given
                                               else None)  # fmt: skip
            info = lab.RunInfo(lab.new_run_id(), tuple(sys.argv),
                               tuple(target) if target else None, options.get("policy"),
                               timeout, options.get("spawn", "exec"), options.get("backend"),
                               drive.name, options)  # fmt: skip
            report = lab.write_report(result, info, report_dir)
    if not result.complete:
        return _say_interrupted(result, report)
    if drive.name == "app":
        for line in lab.app_matrix(lab.by_mode(result)):
            say(line)

    def replay(r: CaseResult) -> str:
        if report is not None:
            return lab.replay_command(r, report)
        return _run_command(r, drive.name, given)

    show.print_summary(result, report, replay=replay, verbosity=verbosity, paint=paint)
    if not result.results:
        say("faultlab: nothing was checked (no cases): that is a failure, not a pass")
    elif not any(t.ran for t in result.per_fault.values()):
        say("faultlab: no crash case ran (the faults asked for apply nowhere, or could not "
            "run): that is a failure, not a pass")  # fmt: skip
    if as_json:
        emit_json({
            "drive": drive.name,
            "options": drive.run_options(),
            "passed": result.passed,
            "counts": result.counts,
            "perFault": {f: t.to_json() for f, t in result.per_fault.items()},
            "unsupported": [{"id": r.case.id, "fault": r.case.fault, "reason": r.detail}
                            for r in result.unsupported],
            "report": str(report) if report else None,
            "cases": [r.to_json() for r in result.results],
        })  # fmt: skip
    return EXIT_OK if result.passed else EXIT_VIOLATIONS


def _run_command(result: CaseResult, drive: str, given: dict[str, Any]) -> str:
    """With no report to replay from: the `faultlab run` of a case."""
    argv = ["faultlab", "run", result.case.scenario, "--at", result.case.occurrence,
            "--fault", result.case.fault]  # fmt: skip
    for key in ("policy", "target", "backend", "agent", "app"):
        if key in given:
            argv += [f"--{key}", str(given[key])]
    if drive == "acp":
        argv += ["--drive", "acp"]
    return shlex.join(argv)


def _say_interrupted(result: ExploreResult, report: Path | None) -> int:
    """An interrupted exploration's one summary line (like pytest's on ^C)."""
    failed = sum(1 for r in result.results if r.failed)
    if result.planned:
        say(f"faultlab: interrupted after {len(result.results)} of {result.planned} case(s), "
            f"{failed} failed; every child process was killed")  # fmt: skip
    else:
        say("faultlab: interrupted during the fault-free runs, before any case; every child "
            "process was killed")  # fmt: skip
    if report is not None:
        say(f"report (incomplete): {report}")
    return EXIT_INTERRUPTED
