# The commands about crash cases: `explore` (every case of some scenarios)
# and `run` (one case, with its timeline).  Both build one drive from the
# options (faultlab/cli/driving.py: an option the drive does not take is
# refused) and call the lab's engine (`faultlab.lab.explore`,
# `faultlab.lab.run_case`); `replay` and `boundaries` are replaying.py's.
# Each parses, calls `faultlab.lab` (imported inside the command, so
# `--help` stays cheap), prints and returns its exit code.
from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import orjson

from faultlab.cli import driving, show
from faultlab.cli import options as opt
from faultlab.cli.output import EXIT_OK, EXIT_VIOLATIONS, UserError, emit_json, guarded, say
from faultlab.userfiles import check_exists

if TYPE_CHECKING:
    from faultlab.lab import Lag, Shard

__all__ = ["explore", "run"]


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
    help="Comma-separated faults to inject, or all: every fault of the drive, as listed.  "
    "Classic: sigkill, power-loss, torn-write, io-error, io-error-enospc, fsync-error, "
    "fsync-enospc, cancel-in-checkpoint, sigterm, crash-in-repair, second-writer, "
    "corrupt-committed, double-sigkill (bounded by --max-double-cases); --drive acp: sigkill, "
    "sigterm, acp-cancel, double-sigkill; --agent: sigkill, sigkill-agent; --app: sigkill, "
    "io-error, second-writer.",
)  # fmt: skip
@click.option(
    "--max-double-cases", type=opt.whole(0, 100_000), default=24, show_default=True,
    metavar="N", help="With double-sigkill: at most N first kill points and N cases per "
    "scenario, sampled with a fixed seed; 0 runs the exhaustive set.",
)  # fmt: skip
@click.option(
    "--max-cases", type=opt.whole(1, 10_000_000), default=10_000, show_default=True,
    metavar="N", help="At most N crash cases per scenario: a scenario that plans more is "
    "refused before any case runs (a target reporting many boundaries).",
)  # fmt: skip
@opt.timeout
@opt.json
@opt.report_dir
@opt.no_report
@opt.agent
@click.option(
    "--delays", metavar="MS,...",
    help="With --agent: kill each boundary occurrence this many ms after it "
    "(default 0,50,200,1000); 'bisect': find, per boundary, the delay after which the "
    "outcome stops changing (the agent's persistence lag, 0 to 1000 ms).",
)  # fmt: skip
@click.option(
    "--repeats", type=opt.whole(1, 1000), default=1, show_default=True,
    help="With --agent: run each case this many times (agents persist asynchronously).",
)  # fmt: skip
@click.option(
    "--app", metavar="FRAMEWORK:MODULE:FACTORY",
    help="Crash-test a framework app with its own persistence: langgraph:... (FACTORY(*, "
    "model, tools, checkpointer) returns a compiled graph), pydantic-ai:... (FACTORY(*, "
    "model, tools) returns an Agent; the module stores its history), openai-agents:... "
    "(FACTORY(*, model, tools) returns an Agent; the module's make_session(id, path) its "
    "Session) or google-adk:... (FACTORY(*, model, tools) returns an ADK Agent or App; the "
    "module's make_session_service(path) its SessionService) (docs/frameworks.md).",
)  # fmt: skip
@click.option(
    "--compare", metavar="durability=MODE,...",
    help="With --app: run the cases in each mode and print one matrix of codes by mode: "
    "LangGraph's durability=exit,async,sync (default async), a pydantic-ai store's "
    "save=node,run (default node).",
)  # fmt: skip
@opt.spawn
@opt.no_trace_cache
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
@click.pass_context
@guarded
def explore(
    ctx: click.Context, scenarios: tuple[Path, ...], policy: str | None, target: str | None,
    jobs: int, shard: Shard | None, timeout: float, as_json: bool, report_dir: Path,
    no_report: bool, spawn: str, faults: str, max_double_cases: int, max_cases: int,
    backend: str | None,
    drive: str, agent: str | None, delays: str | None, repeats: int, app: str | None,
    compare: str | None, exitfirst: bool, maxfail: int | None, keyword: str | None,
    last_failed: bool, verbose: int, quiet: int, color_choice: str,
) -> int:  # fmt: skip
    """Kill the target at every boundary occurrence of every scenario.

    With no SCENARIOS, the bundled scenarios are explored.  The target is the
    reference runtime, --target CMD (--drive acp: over ACP), --agent or --app.
    """
    from faultlab import lab

    verbosity = verbose - quiet
    paint = show.style(color_choice)
    name = driving.drive_name(drive=drive, agent=agent, app=app)
    bisecting = delays is not None and delays.strip() == "bisect"
    if bisecting:
        if name != "agent":
            raise UserError("--delays bisect applies to --agent only")
        if shard is not None or last_failed or exitfirst or maxfail is not None:
            raise UserError("--delays bisect cannot be combined with --shard, --lf, -x or "
                            "--maxfail (its rounds depend on the cases before them)")  # fmt: skip
        delays = None
    given = driving.given_options(ctx, name, policy=policy, target=target, backend=backend,
                                  spawn=spawn, max_double=max_double_cases, agent=agent,
                                  delays=delays, repeats=repeats, app=app,
                                  compare=compare)  # fmt: skip
    rerun_ids: frozenset[str] | None = None
    if last_failed:
        recorded = lab.last_failed(report_dir)
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
        select = lab.Selection(keyword=keyword, ids=rerun_ids, maxfail=stop_after)
    paths = scenarios or (lab.bundled_scenarios(),)
    for path in paths:  # a missing path, a symlink loop, a FIFO: one line, exit 2
        check_exists(path, what="scenario file or directory", directory_ok=True)
    with lab.workdir() as work:
        made = lab.make_drive(name, workdir=work, timeout=timeout, **given)
        fault_names = made.parse_faults(faults.split(","))
        loaded = lab.load_scenarios(paths)
        if not no_report:
            lab.check_report_dir(report_dir)
        if verbosity >= 0:
            say(f"exploring {len(loaded)} scenario(s) with {driving.describe(made, given)}, "
                f"{jobs} job(s)" + (f", shard {shard}" if shard else ""))  # fmt: skip
        if "double-sigkill" in fault_names and verbosity >= 0:
            say("planning double-sigkill cases first: one fault-free recovery per first "
                "kill point")  # fmt: skip
        progress = show.Progress(verbosity=verbosity, paint=paint)
        with contextlib.closing(progress):
            lags: tuple[Lag, ...] = ()
            try:
                if bisecting:
                    bisected = lab.bisect_delays(made, loaded, faults=fault_names, jobs=jobs,
                                                 repeats=repeats, keyword=keyword,
                                                 progress=progress)  # fmt: skip
                    result, lags = bisected.explored, bisected.lags
                else:
                    result = lab.explore(made, loaded, faults=fault_names, jobs=jobs,
                                         shard=shard, progress=progress, select=select,
                                         plan_progress=_PlanProgress(),
                                         max_cases=max_cases)  # fmt: skip
            except lab.Interrupted as stop:
                result = stop.partial
        code = driving.finish(result, made, given, timeout=timeout, as_json=as_json,
                              report_dir=None if no_report else report_dir,
                              verbosity=verbosity, paint=paint)  # fmt: skip
        if lags:
            say(f"persistence lag by bisection ({len(result.results)} case(s)):")
            for lag in lags:
                say(f"  {lag.summary()}")
        return code


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
@opt.no_trace_cache
@opt.backend
@opt.drive
@click.option("--check-determinism", is_flag=True,
              help="Run the case twice; NONDETERMINISTIC if the runs differ.")  # fmt: skip
@opt.agent
@click.option("--repeats", type=opt.whole(1, 1000), default=1, show_default=True,
              help="With --agent: run the case this many times and count its outcomes, "
              "each with its 95% interval (agents persist asynchronously).")  # fmt: skip
@click.option("--app", metavar="FRAMEWORK:MODULE:FACTORY",
              help="Run one case of a framework app (see explore --app); --fault is then "
              "FAULT[/STYLE/MODE], e.g. sigkill/resume/sync.")  # fmt: skip
@click.pass_context
@guarded
def run(
    ctx: click.Context, scenario: Path, occurrence: str, fault: str, policy: str | None,
    target: str | None, timeout: float, as_json: bool, spawn: str, backend: str | None,
    drive: str, check_determinism: bool, agent: str | None, repeats: int, app: str | None,
) -> int:  # fmt: skip
    """Run one case and show its timeline.

    With --agent, --at is a black-box kill point: BOUNDARY[#N][@DELAY], e.g.
    tool/applied#1@200ms (docs/agents.md); --fault sigkill kills the agent's
    whole process tree (every tool server it started, in whatever process
    group), sigkill-agent only the agent's own process group (a tool server
    it put in a group of its own lives on and may finish its call).
    """
    from faultlab import lab

    name = driving.drive_name(drive=drive, agent=agent, app=app)
    given = driving.given_options(ctx, name, policy=policy, target=target, backend=backend,
                                  spawn=spawn, agent=agent, app=app,
                                  check_determinism=check_determinism,
                                  repeats=repeats)  # fmt: skip
    if repeats > 1:
        return _run_repeated(scenario, occurrence, fault, name, given, timeout, as_json)
    with lab.workdir() as work:
        made = lab.make_drive(name, workdir=work, timeout=timeout, **given)
        result = lab.run_case(made, str(scenario), occurrence, fault=fault)
        say(f"case {result.case.id}: {result.verdict.upper()} in {result.seconds:.2f}s")
        _say_records(Path(result.artifacts.get("records", "")))
        trace_path = Path(result.artifacts.get("trace", ""))
        if trace_path.is_file():
            say("probe trace (crash run):")
            for line in trace_path.read_bytes().splitlines():
                message = orjson.loads(line)
                if "boundary" in message:
                    mark = "  <- killed here" if message.get("parked") else ""
                    say(f"  {message['boundary']}#{message['n']}{mark}")
        for log in ("crashed", "repaired", "final"):
            if log in result.artifacts and name in ("classic", "acp"):
                view = lab.read_any(result.artifacts[log])
                say(
                    f"{log} log: {len(view.events)} event(s)"
                    + (f", {view.torn_bytes} torn byte(s) cut" if view.torn_bytes else "")
                )
        for violation in result.violations:
            say(f"  {violation.code} [{violation.guarantee}]: {violation.message}")
    if as_json:
        emit_json({"drive": name, **result.to_json()})
    return EXIT_OK if result.passed else EXIT_VIOLATIONS


def _run_repeated(scenario: Path, occurrence: str, fault: str, name: str, given: dict[str, Any],
                  timeout: float, as_json: bool) -> int:  # fmt: skip
    """`run --agent --repeats N`: the case N times, one line each, then its
    outcomes counted, each with its 95% interval (blackbox/stability.py)."""
    from faultlab import lab

    repeats = int(given["repeats"])
    results = []
    with lab.workdir() as work:
        made = lab.make_drive(name, workdir=work, timeout=timeout, **given)
        for index in range(1, repeats + 1):
            result = lab.run_case(made, str(scenario), occurrence, fault=fault)
            results.append(result)
            codes = ", ".join(result.codes) or "no violation"
            say(f"run {index}/{repeats}: {result.verdict.upper()} ({codes}) in "
                f"{result.seconds:.2f}s")  # fmt: skip
    counted = lab.repeated_outcomes([r.codes for r in results])
    say(f"case {results[0].case.id}, {repeats} runs:")
    for outcome in counted:
        say(f"  {outcome.describe()}")
    if as_json:
        emit_json({"drive": name, "repeats": repeats,
                   "outcomes": [{"codes": list(o.codes), "count": o.count, "low": o.low,
                                 "high": o.high} for o in counted],
                   "runs": [r.to_json() for r in results]})  # fmt: skip
    return EXIT_OK if all(r.passed for r in results) else EXIT_VIOLATIONS
