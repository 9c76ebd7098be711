# The long-running commands that are more than cases of given scenarios:
# `bench` (faultlab's own speed, `faultlab.bench`), `selftest` (the zoo of
# broken runtimes proves the oracle) and `fuzz` (Hypothesis generates the
# scenarios and kill points), with the fuzzer's progress line.  The heavy
# libraries (Hypothesis) load only when the command runs.
from __future__ import annotations

import sys
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
from faultlab.cli.show import fault_line

if TYPE_CHECKING:
    from faultlab.lab import SelftestRow, Shard

__all__ = ["bench", "fuzz", "selftest"]


@click.command(epilog=opt.epilog(
    'faultlab bench --quick     # seconds, not minutes',
    'faultlab bench --out reports/bench.json',
))
@click.option(
    "--quick", is_flag=True, help="Small sizes and few repetitions (seconds, not minutes)."
)
@opt.json
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("reports/bench.json"),
    show_default=True,
    help="Where the results are written (atomically) as JSON.",
)
@guarded
def bench(quick: bool, as_json: bool, out: Path) -> int:
    """Measure the crash loop, parallel exploration, log reload and checkpoint cost.

    Each pair is measured side by side in one run; the table shows the ratios
    and issue 4's targets.  Nothing is asserted: the exit status is 0.
    """
    from faultlab import bench as measure

    results = measure.run_all(quick, say=say)
    measure.write_json(out, results)
    say()
    for line in measure.table(results):
        say(line)
    say(f"results: {out}")
    if as_json:
        emit_json(results)
    return EXIT_OK


@click.command(epilog=opt.epilog(
    'faultlab selftest --quick                        # the CI subset',
    'faultlab selftest --variants repair_says_safe    # one broken runtime, every fault',
))
@click.option("--quick", is_flag=True,
              help="Only each variant's documented catching cases (and the reference runtime "
              "on the same cases): the CI subset.")  # fmt: skip
@click.option("--exhaustive", is_flag=True,
              help="Explore every case of every variant (default: its documented catching "
              "cases first, every case only when they do not catch it), and the reference "
              "runtime in full in every configuration and policy (default: a sample "
              "beyond the default one).")  # fmt: skip
@click.option("--variants", "names", metavar="NAMES", help="Comma-separated variants to run.")
@click.option(
    "--zoo", type=click.Path(dir_okay=False, path_type=Path),
    help="The zoo registry (default: tests/variants/zoo.toml of this checkout).",
)  # fmt: skip
@click.option("--jobs", "-j", type=opt.whole(1, opt.MAX_JOBS), default=2, show_default=True,
              help="Cases (or, with --quick, variants) run in parallel.")  # fmt: skip
@opt.timeout
@opt.json
@opt.report_dir
@opt.no_report
@opt.spawn
@show.color
@guarded
def selftest(
    quick: bool, exhaustive: bool, names: str | None, zoo: Path | None, jobs: int,
    timeout: float, as_json: bool, report_dir: Path, no_report: bool, spawn: str,
    color_choice: str,
) -> int:  # fmt: skip
    """Prove the oracle: every broken runtime of the zoo must be caught with its
    expected code, and the reference runtime must raise no false alarm."""
    from faultlab import lab
    from faultlab.lab import render_selftest_problems

    paint = show.style(color_choice)

    registry = lab.load_zoo(zoo if zoo is not None else lab.default_zoo_path())
    chosen = registry.select(names)
    if quick and exhaustive:
        raise UserError("--quick cannot be combined with --exhaustive")
    mode = "quick cases" if quick else (
        "every fault on their scenarios" if exhaustive else "documented cases first")
    say(f"selftest: {len(chosen)} variant(s) of {registry.path} ({mode}), {jobs} job(s)")

    def progress(row: SelftestRow) -> None:
        shown = row.first_case or row.note
        say(f"  {row.status:13} {row.variant} [{row.stage}] {shown} ({row.seconds:.1f}s)")

    if not no_report:
        lab.check_report_dir(report_dir)
    with lab.workdir() as work:
        try:
            result = lab.run_selftest(registry, variants=chosen, quick=quick, jobs=jobs,
                                      workdir=work, spawn=spawn, timeout=timeout,
                                      progress=progress, exhaustive=exhaustive)  # fmt: skip
        except lab.SelftestInterrupted as stop:
            result = stop.partial
    say()
    for line in lab.format_table(result):
        say(line)
    for line in render_selftest_problems(result.rows, style=paint):
        say(line, color=paint.color or None)
    if not no_report:
        with held_signals():  # an interrupted selftest's report is written whole
            say(f"report{'' if result.complete else ' (incomplete)'}: "
                f"{lab.write_selftest_report(result, report_dir)}")  # fmt: skip
    if not result.complete:
        failed = sum(1 for r in result.rows if r.bad)
        say(f"faultlab: interrupted after {len(result.rows)} row(s), {failed} bad; "
            "every child process was killed")  # fmt: skip
        return EXIT_INTERRUPTED
    if as_json:
        emit_json(result.to_json())
    return EXIT_OK if result.passed else EXIT_VIOLATIONS


class _FuzzProgress:
    """One line on a terminal; a line per tenth of the examples elsewhere."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.shown: tuple[int, int, str] | None = None

    # `p` is the fuzzer's FuzzProgress, which faultlab.lab does not export.
    def __call__(self, p: Any) -> None:
        shrinking = f", shrinking ({p.shrink_runs} run(s))" if p.shrink_runs else ""
        line = f"[{p.done}/{p.total}] example(s), {p.failing} failing{shrinking}"
        if self.tty:
            click.echo(f"\r\x1b[K{line}", err=True, nl=p.phase == "done")
            return
        step = max(1, p.total // 10)
        mark = (p.done // step, p.shrink_runs // 25, p.phase)
        if mark != self.shown:
            self.shown = mark
            say(line)


@click.command(epilog=opt.epilog(
    'faultlab fuzz --examples 500 --jobs 2             # the reference runtime',
    'faultlab fuzz --policy turn-only -n 50 --seed 1   # finds and shrinks a failure',
    "faultlab fuzz --faults all --shard 1/3            # one machine's third",
))
@click.option("--examples", "-n", type=opt.whole(1, 1_000_000), default=100, show_default=True,
              help="Examples (scenario x kill point x fault) to generate.")  # fmt: skip
@click.option("--seed", type=opt.whole(0, 2**63 - 1), default=None,
              help="Campaign seed (default: a random one, printed).")  # fmt: skip
@opt.policy
@opt.target
@click.option("--jobs", "-j", type=opt.whole(1, opt.MAX_JOBS), default=1, show_default=True,
              help="Streams of examples run in parallel.")  # fmt: skip
@click.option("--faults", default="sigkill", show_default=True, metavar="LIST|all",
              help="Comma-separated faults to inject, or all (every fault fuzz can "
              "draw: not double-sigkill, planned by running the target).")  # fmt: skip
@click.option("--check-determinism", is_flag=True,
              help="Run every example twice and compare (else only a failing one).")  # fmt: skip
@click.option("--no-shrink", is_flag=True,
              help="Report a failure as first found, without shrinking it.")  # fmt: skip
@opt.shard
@click.option("--stream-size", type=opt.whole(1, 100_000), default=50, show_default=True,
              help="Examples per stream (the unit of --jobs and --shard).")  # fmt: skip
@opt.timeout
@opt.json
@opt.report_dir
@opt.spawn
@opt.agent
@click.option("--max-delay", type=opt.whole(0, 60_000), default=1000,
              show_default=True, metavar="MS",
              help="With --agent: kill up to this many ms after the drawn boundary.")  # fmt: skip
@click.argument("scenarios", nargs=-1, type=click.Path(path_type=Path))
@show.verbose
@show.quiet
@show.color
@guarded
def fuzz(
    examples: int, seed: int | None, policy: str | None, target: str | None, jobs: int,
    faults: str, check_determinism: bool, no_shrink: bool, shard: Shard | None,
    stream_size: int, timeout: float, as_json: bool, report_dir: Path, spawn: str,
    agent: str | None,
    max_delay: int, scenarios: tuple[Path, ...], verbose: int, quiet: int, color_choice: str,
) -> int:  # fmt: skip
    """Generate scenarios and kill points with Hypothesis; shrink any failure.

    A failure is written under the report directory as a scenario TOML, a
    standalone pytest regression test and a replay command.  Failing examples
    are kept in REPORT_DIR/fuzz-db and replayed first by the next campaign.

    With --agent, SCENARIOS (default: the bundled ones) are run as they are
    and Hypothesis draws EXAMPLES kill points per scenario: any boundary
    occurrence of the fault-free run, any delay up to --max-delay.  Agent
    failures are not shrunk (the outcome at a delay is a race); each is
    replayed with `faultlab run --agent ... --at POINT`.
    """
    import secrets

    from faultlab import lab

    campaign_seed = secrets.randbelow(2**32) if seed is None else seed
    if agent is not None:
        opt.check_agent_alone(agent, policy=policy, target=target, spawn=spawn, shard=shard,
                              check_determinism=check_determinism)  # fmt: skip
        return _fuzz_agent(scenarios, agent=agent, examples=examples, seed=campaign_seed,
                           jobs=jobs, faults=faults, timeout=timeout, as_json=as_json,
                           report_dir=report_dir, max_delay=max_delay)  # fmt: skip
    if scenarios:
        raise UserError("fuzz generates its scenarios: SCENARIOS are for --agent only")
    made = lab.make_target(policy=policy, target=target)
    # fuzz's `all`: the faults it can draw (a crash during recovery is planned
    # by running the target; named, FuzzSettings refuses it with the reason).
    fault_names = lab.parse_faults(faults, by_running=False)
    say(
        f"fuzzing the {made.label}: {examples} example(s), seed {campaign_seed}, "
        f"{jobs} job(s)" + (f", shard {shard}" if shard else "")
    )
    lab.check_report_dir(report_dir)
    with lab.workdir() as work:
        try:
            result = lab.fuzz_campaign(
                policy=policy, target=target, examples=examples, seed=campaign_seed,
                faults=fault_names, jobs=jobs, shard=shard, check_determinism=check_determinism,
                timeout=timeout, workdir=work, database=report_dir / "fuzz-db", spawn=spawn,
                stream_size=stream_size, progress=_FuzzProgress(), shrink=not no_shrink,
            )  # fmt: skip
        except lab.FuzzInterrupted as stop:
            result = stop.partial
        info = lab.RunInfo(lab.new_run_id(), tuple(sys.argv), made.command if target else None,
                           policy, timeout, spawn)  # fmt: skip
        with held_signals():  # an interrupted campaign's report is written whole
            report = lab.write_fuzz_report(result, info, report_dir)
    if not result.complete:
        failed = len(result.findings)
        say(f"faultlab: interrupted after {len(result.examples)} of {examples} example(s), "
            f"{failed} failing; every child process was killed")  # fmt: skip
        say(f"report (incomplete): {report}")
        return EXIT_INTERRUPTED
    summary = orjson.loads((report / "summary.json").read_bytes())
    tally = ", ".join(f"{n} {v}" for v, n in sorted(summary["counts"].items()))
    verdict = "all guarantees held" if result.passed else "violations found"
    say(f"{len(result.examples)} example(s) in {result.seconds:.1f}s: {tally}: {verdict}")
    say(fault_line(summary["perFault"]))
    if not result.examples:
        say("faultlab: nothing was checked (this shard has no examples): a failure, not a pass")
    verbosity = verbose - quiet
    paint = show.style(color_choice)
    for finding in summary["findings"] if verbosity >= 0 else ():
        how = "shrunk" if finding["shrunk"] else "NOT shrunk (nondeterministic)"
        say(f"{paint('FAIL', 'fail')} {finding['id']} ({how}): {', '.join(finding['codes'])}",
            color=paint.color or None)  # fmt: skip
        say(f"  scenario:        {finding['scenario']}")
        say(f"  regression test: python -m pytest {finding['regressionTest']}")
    replays = {finding["id"]: finding["replay"] for finding in summary["findings"]}
    show.print_failures([f.result for f in result.findings],
                        replay=lambda r: str(replays.get(r.case.id, "")),
                        report=report, verbosity=verbosity, paint=paint)  # fmt: skip
    say(f"report: {report}")
    if as_json:
        emit_json({**summary, "report": str(report)})
    return EXIT_OK if result.passed else EXIT_VIOLATIONS


def _fuzz_agent(
    scenarios: tuple[Path, ...], *, agent: str, examples: int, seed: int, jobs: int,
    faults: str, timeout: float, as_json: bool, report_dir: Path, max_delay: int,
) -> int:  # fmt: skip
    """`fuzz --agent`: drawn kill points of a black-box agent, reported like explore."""
    from faultlab import lab
    from faultlab.cli import driving

    loaded = lab.load_scenarios(list(scenarios) or [lab.bundled_scenarios()])
    say(f"fuzzing the agent {agent}: {examples} kill point(s) per scenario over "
        f"{len(loaded)} scenario(s), delays up to {max_delay} ms, seed {seed}, {jobs} job(s)")
    with lab.workdir() as work:
        made = lab.make_drive("agent", workdir=work, timeout=timeout, agent=agent)
        try:
            result = lab.fuzz(made, loaded, examples=examples, seed=seed, jobs=jobs,
                              faults=faults.split(","), max_delay_ms=max_delay,
                              progress=show.Progress())  # fmt: skip
        except lab.Interrupted as stop:
            result = stop.partial
        return driving.finish(result, made, {"agent": agent}, timeout=timeout,
                              as_json=as_json, report_dir=report_dir)  # fmt: skip
