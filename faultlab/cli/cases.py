# The commands about crash cases: `explore` (every case of some scenarios),
# `run` (one case, with its timeline), `boundaries` (the fault-free dry run
# that lists the kill points) and `replay` (one recorded case again), with the
# double-sigkill planning line and pytest's -x, --maxfail, -k and --lf (the
# summary, the grouped failures and the progress line are `show`'s).  Each parses, calls
# `faultlab.lab` (imported inside the command, so `--help` stays cheap),
# prints and returns its exit code.
from __future__ import annotations

import contextlib
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import orjson

from faultlab.cli import options as opt
from faultlab.cli import show
from faultlab.cli.output import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_VIOLATIONS,
    UserError,
    emit_json,
    guarded,
    held_signals,
    say,
)
from faultlab.userfiles import check_exists

if TYPE_CHECKING:
    from faultlab.lab import CaseResult, ExploreResult, Shard

__all__ = ["boundaries", "explore", "replay", "run"]


class _PlanProgress:
    """Double-sigkill planning, one probe (a fault-free recovery) per first
    kill point: a line redrawn on a terminal, every tenth and the last elsewhere."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()

    def __call__(self, scenario: str, probed: int, total: int) -> None:
        line = f"planning double-sigkill: {scenario}: {probed}/{total} first kill point(s) probed"
        if self.tty:
            click.echo(f"\r\x1b[K{line}", err=True, nl=probed == total)
        elif probed == total or probed % max(1, total // 10) == 0:
            say(line)


@click.command(epilog=opt.epilog(
    'faultlab explore scenarios/payment.toml --policy turn-only   # fails: a double charge',
    "faultlab explore -k 'tool/effect and sigkill' -x     # some cases; stop at a failure",
    "faultlab explore --lf                                # the newest report's failures again",
))
@click.argument("scenarios", nargs=-1, type=click.Path(path_type=Path))
@opt.policy
@opt.target
@click.option(
    "--jobs",
    "-j",
    type=opt.whole(1, opt.MAX_JOBS),
    default=1,
    show_default=True,
    help="Cases run in parallel.",
)
@opt.shard
@click.option(
    "--faults", default="all", show_default=True, metavar="LIST|all",
    help="Comma-separated faults to inject (sigkill, power-loss, torn-write, io-error, "
    "io-error-enospc, fsync-error, fsync-enospc, cancel-in-checkpoint, sigterm, "
    "crash-in-repair, second-writer, corrupt-committed), or all; "
    "double-sigkill (crashes during recovery) is not in all: name it, e.g. all,double-sigkill.",
)  # fmt: skip
@click.option(
    "--max-double-cases", type=opt.whole(0, 100_000), default=24, show_default=True,
    metavar="N", help="With double-sigkill: at most N first kill points and N cases per "
    "scenario, sampled with a fixed seed; 0 runs the exhaustive set.",
)  # fmt: skip
@opt.timeout
@opt.json
@opt.report_dir
@opt.no_report
@opt.agent
@click.option(
    "--delays", metavar="MS,...",
    help="With --agent: kill each boundary occurrence this many ms after it "
    "(default 0,50,200,1000).",
)  # fmt: skip
@click.option(
    "--repeats", type=opt.whole(1, 1000), default=1, show_default=True,
    help="With --agent: run each case this many times (agents persist asynchronously).",
)  # fmt: skip
@click.option(
    "--app", metavar="FRAMEWORK:MODULE:FACTORY",
    help="Crash-test a framework app with its own persistence: langgraph:... (FACTORY(*, "
    "model, tools, checkpointer) returns a compiled graph) or pydantic-ai:... (FACTORY(*, "
    "model, tools) returns an Agent; the module stores its history) (docs/frameworks.md).",
)  # fmt: skip
@click.option(
    "--compare", metavar="durability=MODE,...",
    help="With --app: run the cases in each mode and print one matrix of codes by mode: "
    "LangGraph's durability=exit,async,sync (default async), a pydantic-ai store's "
    "save=node,run (default node).",
)  # fmt: skip
@opt.spawn
@opt.backend
@opt.drive
@click.option("-x", "--exitfirst", is_flag=True, help="Stop after the first failing case.")
@click.option("--maxfail", type=opt.whole(1, 1_000_000), metavar="N",
              help="Stop after N failing cases.")  # fmt: skip
@click.option("-k", "keyword", metavar="EXPR",
              help="Only the cases whose id matches EXPR: words (substrings of the id, "
              "any case) with and, or, not and parentheses, e.g. -k 'effect and not power'.",
              )  # fmt: skip
@click.option("--lf", "--last-failed", "last_failed", is_flag=True,
              help="Rerun only the failing cases of the newest report (all if none "
              "failed).")  # fmt: skip
@show.verbose
@show.quiet
@show.color
@guarded
def explore(
    scenarios: tuple[Path, ...], policy: str | None, target: str | None, jobs: int,
    shard: Shard | None, timeout: float, as_json: bool, report_dir: Path, no_report: bool,
    spawn: str, faults: str, max_double_cases: int, backend: str | None, drive: str,
    agent: str | None, delays: str | None, repeats: int, app: str | None, compare: str | None,
    exitfirst: bool, maxfail: int | None, keyword: str | None, last_failed: bool,
    verbose: int, quiet: int, color_choice: str,
) -> int:  # fmt: skip
    """Kill the target at every boundary occurrence of every scenario.

    With no SCENARIOS, the bundled scenarios are explored.
    """
    from faultlab import lab
    from faultlab.lab.campaigns.select import Selection

    verbosity = verbose - quiet
    paint = show.style(color_choice)
    rerun_ids: frozenset[str] | None = None
    if last_failed:
        from faultlab.lab.report.recent import last_failed as newest_failures

        recorded = newest_failures(report_dir)
        if recorded is None:
            say(f"--lf: no report in {report_dir}: running every case")
        elif not recorded.ids:
            say(f"--lf: no case failed in {recorded.run}: running every case")
        else:
            rerun_ids = frozenset(recorded.ids)
            say(f"--lf: rerunning {len(recorded.ids)} failing case(s) of {recorded.run}")
            if not scenarios:
                scenarios = tuple(Path(p) for p in recorded.scenarios)
    stop_after = 1 if exitfirst else maxfail
    select = None
    if keyword is not None or rerun_ids is not None or stop_after is not None:
        select = Selection(keyword=keyword, ids=rerun_ids, maxfail=stop_after)
    paths: Sequence[Path] = scenarios or (lab.bundled_scenarios(),)
    for path in paths:  # a missing path, a symlink loop, a FIFO: one line, exit 2
        check_exists(path, what="scenario file or directory", directory_ok=True)
    opt.check_agent_alone(agent, policy=policy, target=target, backend=backend, drive=drive,
                          spawn=spawn, max_double_cases=None if max_double_cases == 24
                          else max_double_cases)  # fmt: skip
    if app is not None:
        for name, value in (("agent", agent), ("delays", delays), ("policy", policy),
                            ("target", target), ("backend", backend)):  # fmt: skip
            if value is not None:
                raise UserError(f"--app cannot be combined with --{name}")
        if select is not None:
            raise UserError("-k, --lf, -x and --maxfail do not apply to --app yet")
        return _explore_app(paths, app=app, compare=compare, jobs=jobs, shard=shard,
                            timeout=timeout, as_json=as_json, faults=faults, spawn=spawn,
                            report_dir=None if no_report else report_dir)  # fmt: skip
    if compare is not None:
        raise UserError("--compare needs --app")
    if agent is not None:
        if select is not None:
            raise UserError("-k, --lf, -x and --maxfail do not apply to --agent yet")
        return _explore_agent(paths, agent=agent, jobs=jobs, shard=shard, timeout=timeout,
                              as_json=as_json, report_dir=report_dir, no_report=no_report,
                              faults=faults, delays=delays, repeats=repeats)  # fmt: skip
    made = lab.make_target(policy=policy, target=target, backend=backend)
    lab.check_drive(drive, backend=backend)
    fault_names = lab.parse_faults(faults, drive=drive)
    loaded = lab.load_scenarios(paths)
    if not no_report:
        lab.check_report_dir(report_dir)
    if verbosity >= 0:
        say(
            f"exploring {len(loaded)} scenario(s) with the {made.label}, {jobs} job(s)"
            + (", driven over ACP" if drive == "acp" else "")
            + (f", shard {shard}" if shard else "")
        )
    if "double-sigkill" in fault_names:
        say("planning double-sigkill cases first: one fault-free recovery per first kill point")
    progress = show.Progress(verbosity=verbosity, paint=paint)
    with lab.workdir() as work, contextlib.closing(progress):
        try:
            result = lab.explore_scenarios(
                loaded, policy=policy, target=target, jobs=jobs, shard=shard,
                timeout=timeout, workdir=work, progress=progress, spawn=spawn,
                faults=fault_names, backend=backend, drive=drive, max_double=max_double_cases,
                plan_progress=_PlanProgress(), select=select,
            )  # fmt: skip
        except lab.Interrupted as stop:
            result = stop.partial
        report = None
        with held_signals():  # an interrupted run's report is written whole
            if not no_report:
                info = lab.RunInfo(
                    lab.new_run_id(), tuple(sys.argv), made.command if target else None,
                    policy, timeout, spawn, backend, drive,
                )  # fmt: skip
                report = lab.write_report(result, info, report_dir)
    if not result.complete:
        return _say_interrupted(result, report)
    from faultlab.lab.report import replay_command

    replay = ((lambda r: replay_command(r, report)) if report is not None
              else show.run_command(policy=policy, target=target, backend=backend,
                                drive=drive))  # fmt: skip
    show.print_summary(result, report, replay=replay, verbosity=verbosity, paint=paint)
    if not result.results:
        say("faultlab: nothing was checked (no cases): that is a failure, not a pass")
    elif not any(t.ran for t in result.per_fault.values()):
        say("faultlab: no crash case ran (the faults asked for apply nowhere, or could not "
            "run): that is a failure, not a pass")  # fmt: skip
    if as_json:
        emit_json(
            {
                "passed": result.passed,
                "counts": result.counts,
                "perFault": {f: t.to_json() for f, t in result.per_fault.items()},
                "unsupported": [
                    {"id": r.case.id, "fault": r.case.fault, "reason": r.detail}
                    for r in result.unsupported
                ],
                "report": str(report) if report else None,
                "cases": [r.to_json() for r in result.results],
            }
        )
    return EXIT_OK if result.passed else EXIT_VIOLATIONS


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


def _say_records(path: Path) -> None:
    """The servers' view of a black-box case: boundaries, agent runs, the kill."""
    if not path.is_file():
        return
    say("what faultlab's servers saw:")
    for line in path.read_bytes().splitlines():
        record = orjson.loads(line)
        if record.get("fact") == "agent/start":
            run, kind, turn = record.get("run"), record.get("kind"), record.get("turn")
            say(f"  agent run {run}: {kind} (turn {turn})")
        elif record.get("fact") == "agent/running" and "netns" in record:
            where = "its own, loopback only" if record["netns"] else "shared with the lab"
            say(f"    network: {where}")
        elif "boundary" in record:
            what = record.get("tool") or record.get("api") or ""
            mark = "  <- killed here" if record.get("killPoint") else ""
            say(f"    {record['boundary']}#{record['n']} {what}{mark}")


def _explore_app(
    paths: Sequence[Path], *, app: str, compare: str | None, jobs: int, shard: Shard | None,
    timeout: float, as_json: bool, faults: str, spawn: str = "fork",
    report_dir: Path | None = None,
) -> int:  # fmt: skip
    """`explore --app`: a framework app's cases, in each durability mode, and
    one report of them all (each failure's records, databases and readings)."""
    from faultlab import lab
    from faultlab.lab.apps import MODES, parse_app
    from faultlab.lab.campaigns.appexplore import (
        app_matrix,
        combined_result,
        explore_app,
        parse_compare,
    )

    framework, _ = parse_app(app)
    modes = parse_compare(compare, framework=framework)
    dimension = MODES[framework][0]
    loaded = lab.load_scenarios(paths)
    if report_dir is not None:
        lab.check_report_dir(report_dir)
    fault_names = [f.strip() for f in faults.split(",") if f.strip()]
    if fault_names == ["all"]:
        fault_names = ["sigkill"]  # io-error only when named: it doubles the cases
    results = {}
    with lab.workdir() as work:
        for mode in modes:
            say(f"exploring {len(loaded)} scenario(s) with the app {app}, {dimension} {mode}, "
                f"{jobs} job(s)" + (f", shard {shard}" if shard else ""))  # fmt: skip
            results[mode] = explore_app(loaded, app=app, workdir=work, durability=mode,
                                        jobs=jobs, shard=shard, faults=fault_names,
                                        timeout=timeout, progress=show.Progress(),
                                        spawn=spawn)  # fmt: skip
        report = None
        if report_dir is not None:  # inside the workdir: the failures' files are still there
            info = lab.RunInfo(lab.new_run_id(), tuple(sys.argv), (app,), None, timeout,
                               spawn, None, "app")  # fmt: skip
            report = lab.write_report(combined_result(results), info, report_dir)
    for line in app_matrix(results):
        say(line)
    passed = all(r.passed for r in results.values())
    if report is not None:
        say(f"report: {report}")
    if as_json:
        emit_json({"passed": passed, "report": str(report) if report else None, "modes": {
            mode: {"passed": r.passed, "counts": r.counts,
                   "cases": [c.to_json() for c in r.results]}
            for mode, r in results.items()}})  # fmt: skip
    return EXIT_OK if passed else EXIT_VIOLATIONS


def _explore_agent(
    paths: Sequence[Path], *, agent: str, jobs: int, shard: Shard | None, timeout: float,
    as_json: bool, report_dir: Path, no_report: bool, faults: str, delays: str | None,
    repeats: int,
) -> int:  # fmt: skip
    """`explore --agent`: the black-box cases of a real agent."""
    from faultlab import lab
    from faultlab.lab.servers.points import parse_delays

    loaded = lab.load_scenarios(paths)
    fault_names = [f.strip() for f in faults.split(",") if f.strip()]  # "all" is the lab's
    say(f"exploring {len(loaded)} scenario(s) with the agent {agent}, {jobs} job(s)"
        + (f", shard {shard}" if shard else ""))  # fmt: skip
    with lab.workdir() as work:
        result = lab.explore_agent(
            loaded, agent=agent, jobs=jobs, shard=shard, timeout=timeout, workdir=work,
            progress=show.Progress(), faults=fault_names, repeats=repeats,
            delays_ms=None if delays is None else parse_delays(delays),
        )  # fmt: skip
        return report_agent_result(result, agent=agent, timeout=timeout, as_json=as_json,
                                   report_dir=None if no_report else report_dir)  # fmt: skip


def report_agent_result(
    result: ExploreResult, *, agent: str, timeout: float, as_json: bool,
    report_dir: Path | None,
) -> int:  # fmt: skip
    """The report, summary and exit code of black-box cases (explore, fuzz)."""
    from faultlab import lab
    from faultlab.lab.report import replay_command

    report = None
    if report_dir is not None:
        info = lab.RunInfo(lab.new_run_id(), tuple(sys.argv), (agent,), None, timeout,
                           "exec", None, "agent")  # fmt: skip
        report = lab.write_report(result, info, report_dir)

    def replay(r: CaseResult) -> str:
        if report is not None:
            return replay_command(r, report)
        return shlex.join(["faultlab", "run", r.case.scenario, "--agent", agent, "--at",
                           r.case.occurrence])  # fmt: skip

    show.print_summary(result, report, replay=replay)
    if not result.results:
        say("faultlab: nothing was checked (no cases): that is a failure, not a pass")
    if as_json:
        emit_json({"passed": result.passed, "counts": result.counts,
                   "report": str(report) if report else None,
                   "cases": [r.to_json() for r in result.results]})  # fmt: skip
    return EXIT_OK if result.passed else EXIT_VIOLATIONS


@click.command(epilog=opt.epilog(
    'faultlab run scenarios/payment.toml --at tool/effect#1 --policy turn-only',
    'faultlab run scenarios/chat.toml --at flush/written#1 --fault power-loss',
))
@click.argument("scenario", type=click.Path(path_type=Path))
@click.option(
    "--at",
    "occurrence",
    required=True,
    metavar="BOUNDARY[#N]",
    help="The boundary occurrence to kill at, e.g. tool/durable#2.",
)
@click.option("--fault", default="sigkill", show_default=True, help="The fault to inject.")
@opt.policy
@opt.target
@opt.timeout
@opt.json
@opt.spawn
@opt.backend
@opt.drive
@click.option("--check-determinism", is_flag=True,
              help="Run the case twice; NONDETERMINISTIC if the runs differ.")  # fmt: skip
@opt.agent
@guarded
def run(
    scenario: Path, occurrence: str, fault: str, policy: str | None, target: str | None,
    timeout: float, as_json: bool, spawn: str, backend: str | None, drive: str,
    check_determinism: bool, agent: str | None,
) -> int:  # fmt: skip
    """Run one case and show its timeline.

    With --agent, --at is a black-box kill point: BOUNDARY[#N][@DELAY], e.g.
    tool/applied#1@200ms (docs/agents.md).
    """
    from faultlab import lab

    opt.check_agent_alone(agent, policy=policy, target=target, backend=backend, drive=drive,
                          spawn=spawn, check_determinism=check_determinism)  # fmt: skip
    if agent is not None:
        with lab.workdir() as work:
            result = lab.run_agent_case(str(scenario), occurrence, agent=agent, fault=fault,
                                        timeout=timeout, workdir=work)  # fmt: skip
            say(f"case {result.case.id}: {result.verdict.upper()} in {result.seconds:.2f}s")
            _say_records(Path(result.artifacts.get("records", "")))
            for violation in result.violations:
                say(f"  {violation.code} [{violation.guarantee}]: {violation.message}")
        if as_json:
            emit_json(result.to_json())
        return EXIT_OK if result.passed else EXIT_VIOLATIONS
    with lab.workdir() as work:
        result = lab.run_single(
            str(scenario),
            occurrence,
            fault=fault,
            policy=policy,
            target=target,
            timeout=timeout,
            workdir=work,
            spawn=spawn,
            backend=backend,
            drive=drive,
            check_determinism=check_determinism,
        )
        say(f"case {result.case.id}: {result.verdict.upper()} in {result.seconds:.2f}s")
        trace_path = Path(result.artifacts.get("trace", ""))
        if trace_path.is_file():
            say("probe trace (crash run):")
            for line in trace_path.read_bytes().splitlines():
                message = orjson.loads(line)
                if "boundary" in message:
                    mark = "  <- killed here" if message.get("parked") else ""
                    say(f"  {message['boundary']}#{message['n']}{mark}")
        for name in ("crashed", "repaired", "final"):
            if name in result.artifacts:
                view = lab.read_any(result.artifacts[name])
                say(
                    f"{name} log: {len(view.events)} event(s)"
                    + (f", {view.torn_bytes} torn byte(s) cut" if view.torn_bytes else "")
                )
        for violation in result.violations:
            say(f"  {violation.code} [{violation.guarantee}]: {violation.message}")
    if as_json:
        emit_json(result.to_json())
    return EXIT_OK if result.passed else EXIT_VIOLATIONS


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
    if info.get("drive") == "app":  # a framework app's case: target holds the --app spec
        with lab.workdir() as work:
            result = lab.run_app_single(
                record["scenario"], record["occurrence"], app=info["target"][0],
                fault=record["fault"], timeout=info.get("timeout", 60.0), workdir=work,
                spawn=spawn,
            )  # fmt: skip
        return _said_replay(case_id, record, result, as_json)
    if info.get("drive") == "agent":  # a black-box case: target holds the agent
        with lab.workdir() as work:
            result = lab.run_agent_case(
                record["scenario"], record["occurrence"], agent=info["target"][0],
                fault=record["fault"], timeout=info.get("timeout", 120.0), workdir=work,
            )  # fmt: skip
        return _said_replay(case_id, record, result, as_json)
    with lab.workdir() as work:
        result = lab.run_single(
            record["scenario"],
            record["occurrence"],
            fault=record["fault"],
            policy=info.get("policy"),
            target=info.get("target"),
            timeout=info.get("timeout", 60.0),
            workdir=work,
            spawn=spawn,
            backend=info.get("backend"),
            drive=info.get("drive", "classic"),
        )
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
