# The commands about crash cases: `explore` (every case of some scenarios),
# `run` (one case, with its timeline), `boundaries` (the fault-free dry run
# that lists the kill points) and `replay` (one recorded case again), with the
# progress line and the summary table `explore` prints.  Each parses, calls
# `faultlab.lab` (imported inside the command, so `--help` stays cheap),
# prints and returns its exit code.
from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import orjson

from faultlab.cli import options as opt
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

if TYPE_CHECKING:
    from faultlab.lab import CaseResult, ExploreResult, Shard

__all__ = ["boundaries", "explore", "fault_line", "replay", "run"]


def fault_line(per_fault: Mapping[str, Mapping[str, int]]) -> str:
    """Crash cases that ran per fault, and those that could not (unsupported);
    `per_fault` as in summary.json's `perFault`."""
    parts = [
        f"{fault} {t['ran']} ran"
        + (f" + {t['unsupported']} unsupported" if t["unsupported"] else "")
        for fault, t in per_fault.items()
    ]
    return "crash cases per fault: " + (", ".join(parts) or "none ran")


class _Progress:
    """A one-line progress display on a terminal; sparse lines elsewhere."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.failed = 0

    def __call__(self, result: CaseResult, done: int, total: int) -> None:
        self.failed += 1 if result.failed else 0
        line = f"[{done}/{total}] {self.failed} failing  {result.verdict:5} {result.case.id}"
        if self.tty:
            click.echo(f"\r\x1b[K{line}", err=True, nl=done == total)
        elif done == total or done % max(1, total // 10) == 0:
            say(line)


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


def _print_summary(result: ExploreResult, report: Path | None) -> None:
    per: dict[str, Counter[str]] = {}
    for r in result.results:
        per.setdefault(Path(r.case.scenario).name, Counter())[r.verdict] += 1
    width = max((len(name) for name in per), default=8)
    # cases = pass + fail + other + unsupported, per scenario and in total.
    say(f"{'scenario':{width}}  cases  pass  fail  other  unsupported")
    for name, counts in [*per.items(), ("total", sum(per.values(), Counter()))]:
        other = sum(counts.values()) - counts["pass"] - counts["fail"] - counts["unsupported"]
        say(
            f"{name:{width}}  {sum(counts.values()):5}  {counts['pass']:4}  "
            f"{counts['fail']:4}  {other:5}  {counts['unsupported']:11}"
        )
    say(fault_line({f: t.to_json() for f, t in result.per_fault.items()}))
    failing = [r for r in result.results if r.failed]
    for r in failing[:20]:
        say(f"  {r.verdict.upper():5} {r.case.id}: {', '.join(r.codes)}")
        if r.violations:
            say(f"        {r.violations[0].message}")
    if len(failing) > 20:
        say(f"  ... and {len(failing) - 20} more failing case(s); see the report")
    unsupported: dict[tuple[str, str], int] = {}
    for r in result.unsupported:
        key = (r.case.fault, r.detail)
        unsupported[key] = unsupported.get(key, 0) + 1
    for (fault, reason), count in unsupported.items():
        say(f"  UNSUPPORTED {fault} ({count} scenario(s), not run, not passed): {reason}")
    codes = Counter(code for r in result.results for code in r.codes)
    verdict = "all guarantees held" if result.passed else "violations found"
    if result.passed and unsupported:
        verdict += " (on the faults this backend supports)"
    tally = ", ".join(f"{n} {v}" for v, n in sorted(result.counts.items()))
    if result.references:
        from faultlab import lab

        say(lab.ground_truth_line(result))
    say(f"{len(result.results)} case(s) in {result.seconds:.1f}s: {tally}: {verdict}")
    if codes:
        say("codes: " + ", ".join(f"{c} x{n}" for c, n in codes.most_common()))
    if report is not None:
        say(f"report: {report}")


@click.command()
@click.argument("scenarios", nargs=-1, type=click.Path(path_type=Path))
@opt.policy
@opt.target
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
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
    "--max-double-cases", type=click.IntRange(min=0), default=24, show_default=True,
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
    "--repeats", type=click.IntRange(min=1), default=1, show_default=True,
    help="With --agent: run each case this many times (agents persist asynchronously).",
)  # fmt: skip
@opt.spawn
@opt.backend
@opt.drive
@guarded
def explore(
    scenarios: tuple[Path, ...], policy: str | None, target: str | None, jobs: int,
    shard: Shard | None, timeout: float, as_json: bool, report_dir: Path, no_report: bool,
    spawn: str, faults: str, max_double_cases: int, backend: str | None, drive: str,
    agent: str | None, delays: str | None, repeats: int,
) -> int:  # fmt: skip
    """Kill the target at every boundary occurrence of every scenario.

    With no SCENARIOS, the bundled scenarios are explored.
    """
    from faultlab import lab

    paths: Sequence[Path] = scenarios or (lab.bundled_scenarios(),)
    for path in paths:
        if not path.exists():
            raise UserError(f"{path}: no such scenario file or directory")
    opt.check_agent_alone(agent, policy=policy, target=target, backend=backend, drive=drive,
                          spawn=spawn, max_double_cases=None if max_double_cases == 24
                          else max_double_cases)  # fmt: skip
    if agent is not None:
        return _explore_agent(paths, agent=agent, jobs=jobs, shard=shard, timeout=timeout,
                              as_json=as_json, report_dir=report_dir, no_report=no_report,
                              faults=faults, delays=delays, repeats=repeats)  # fmt: skip
    made = lab.make_target(policy=policy, target=target, backend=backend)
    lab.check_drive(drive, backend=backend)
    fault_names = lab.parse_faults(faults, drive=drive)
    loaded = lab.load_scenarios(paths)
    if not no_report:
        lab.check_report_dir(report_dir)
    say(
        f"exploring {len(loaded)} scenario(s) with the {made.label}, {jobs} job(s)"
        + (", driven over ACP" if drive == "acp" else "")
        + (f", shard {shard}" if shard else "")
    )
    if "double-sigkill" in fault_names:
        say("planning double-sigkill cases first: one fault-free recovery per first kill point")
    with lab.workdir() as work:
        try:
            result = lab.explore_scenarios(
                loaded, policy=policy, target=target, jobs=jobs, shard=shard,
                timeout=timeout, workdir=work, progress=_Progress(), spawn=spawn,
                faults=fault_names, backend=backend, drive=drive, max_double=max_double_cases,
                plan_progress=_PlanProgress(),
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
    _print_summary(result, report)
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
        elif "boundary" in record:
            what = record.get("tool") or record.get("api") or ""
            mark = "  <- killed here" if record.get("killPoint") else ""
            say(f"    {record['boundary']}#{record['n']} {what}{mark}")


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
            progress=_Progress(), faults=fault_names, repeats=repeats,
            delays_ms=None if delays is None else parse_delays(delays),
        )  # fmt: skip
        report = None
        if not no_report:
            info = lab.RunInfo(lab.new_run_id(), tuple(sys.argv), (agent,), None, timeout,
                               "exec", None, "agent")  # fmt: skip
            report = lab.write_report(result, info, report_dir)
    _print_summary(result, report)
    if not result.results:
        say("faultlab: nothing was checked (no cases): that is a failure, not a pass")
    if as_json:
        emit_json({"passed": result.passed, "counts": result.counts,
                   "report": str(report) if report else None,
                   "cases": [r.to_json() for r in result.results]})  # fmt: skip
    return EXIT_OK if result.passed else EXIT_VIOLATIONS


@click.command()
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


@click.command()
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


@click.command()
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
