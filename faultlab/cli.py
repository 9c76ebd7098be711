# The `faultlab` command line: parse, call the lab, print, exit.  Logic lives
# in `faultlab.lab`; people's output goes to stderr, `--json` output to
# stdout.  Exit codes: 0 guarantees held, 1 violations, 2 usage or scenario
# error, 3 internal error, 130 interrupted.
from __future__ import annotations

import signal
import sys
import traceback
from collections import Counter
from collections.abc import Callable, Sequence
from functools import wraps
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click
import orjson

__all__ = ["main"]

F = TypeVar("F", bound=Callable[..., Any])

EXIT_OK, EXIT_VIOLATIONS, EXIT_USAGE, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


class UserError(Exception):
    """A mistake of the user's: one line, exit 2."""


def _say(text: str = "") -> None:
    click.echo(text, err=True)


def _emit_json(value: Any) -> None:
    sys.stdout.buffer.write(orjson.dumps(value, option=orjson.OPT_INDENT_2) + b"\n")
    sys.stdout.flush()


def _guarded(command: F) -> F:
    """Turn user mistakes into one line + exit 2 and bugs into exit 3."""

    @wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> NoReturn:
        from faultlab.lab import LabUsageError
        from faultlab.probe import ProbeError
        from faultlab.scenario import ScenarioError

        previous = signal.signal(signal.SIGTERM, _interrupt)
        try:
            code = command(*args, **kwargs)
        except (UserError, ScenarioError, ProbeError, LabUsageError) as exc:
            _say(f"faultlab: error: {exc}")
            code = EXIT_USAGE
        except KeyboardInterrupt:
            _say("faultlab: interrupted; every child process was killed")
            code = EXIT_INTERRUPTED
        except Exception:
            _say("faultlab: internal error (a bug in faultlab, please report it):")
            _say(traceback.format_exc().rstrip())
            code = EXIT_INTERNAL
        finally:
            signal.signal(signal.SIGTERM, previous)
        sys.exit(code)

    return wrapper  # type: ignore[return-value]


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def _shard(_ctx: click.Context, _param: click.Parameter, value: str | None) -> Any:
    if value is None:
        return None
    from faultlab.lab import parse_shard

    try:
        return parse_shard(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


_policy = click.option(
    "--policy", type=click.Choice(["semantic", "turn-only", "every-event"]),
    help="Checkpoint policy for the reference runtime (default: each scenario's own).",
)  # fmt: skip
_target = click.option(
    "--target", metavar="CMD",
    help="Crash-test this command instead of the reference runtime (see docs/probe-protocol.md).",
)  # fmt: skip
_timeout = click.option(
    "--timeout", type=click.FloatRange(min=0.1), default=60.0, show_default=True,
    help="Seconds a child may take to reach its kill point or to exit.",
)  # fmt: skip
_json = click.option("--json", "as_json", is_flag=True, help="Machine output on stdout.")
_backend = click.option(
    "--backend", type=click.Choice(["jsonl", "sqlite"]),
    help="Persistence backend of the target (default: each scenario's own; docs/backends.md).",
)  # fmt: skip
_spawn = click.option(
    "--spawn", type=click.Choice(["fork", "exec"]), default="fork", show_default=True,
    help="fork: children of the reference runtime come from a fork server (fast); "
    "exec: a fresh interpreter per child (the fidelity reference). --target always execs.",
)  # fmt: skip
_drive = click.option(
    "--drive", type=click.Choice(["classic", "acp"]), default="classic", show_default=True,
    help="classic: the target runs a scenario by itself; acp: the lab drives an ACP agent "
    "(python -m faultlab.runtime.acp, or --target) as a client (docs/acp.md).",
)  # fmt: skip
_report_dir = click.option(
    "--report-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("reports"),
    show_default=True, help="Where reports are written.",
)  # fmt: skip


class _Faultlab(click.Group):
    """Usage errors as one line (`faultlab: error: ...`) and exit 2."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        kwargs["standalone_mode"] = False
        try:
            return super().main(*args, **kwargs)
        except click.UsageError as exc:
            where = f"{exc.ctx.command_path}: " if exc.ctx is not None else ""
            _say(f"faultlab: error: {where}{exc.format_message()}")
            sys.exit(EXIT_USAGE)
        except click.ClickException as exc:
            _say(f"faultlab: error: {exc.format_message()}")
            sys.exit(exc.exit_code)
        except click.Abort:
            _say("faultlab: interrupted")
            sys.exit(EXIT_INTERRUPTED)


@click.group(cls=_Faultlab, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="faultlab")
def main() -> None:
    """Crash-test the durability of AI agent runtimes at semantic boundaries."""


class _Progress:
    """A one-line progress display on a terminal; sparse lines elsewhere."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.failed = 0

    def __call__(self, result: Any, done: int, total: int) -> None:
        self.failed += 1 if result.failed else 0
        line = f"[{done}/{total}] {self.failed} failing  {result.verdict:5} {result.case.id}"
        if self.tty:
            click.echo(f"\r\x1b[K{line}", err=True, nl=done == total)
        elif done == total or done % max(1, total // 10) == 0:
            _say(line)


def _print_summary(result: Any, report: Path | None) -> None:
    per: dict[str, Counter[str]] = {}
    for r in result.results:
        per.setdefault(Path(r.case.scenario).name, Counter())[r.verdict] += 1
    width = max((len(name) for name in per), default=8)
    _say(f"{'scenario':{width}}  cases  pass  fail  other")
    for name, counts in per.items():
        other = sum(counts.values()) - counts["pass"] - counts["fail"] - counts["unsupported"]
        _say(
            f"{name:{width}}  {sum(counts.values()):5}  {counts['pass']:4}  "
            f"{counts['fail']:4}  {other:5}"
        )
    failing = [r for r in result.results if r.failed]
    for r in failing[:20]:
        _say(f"  {r.verdict.upper():5} {r.case.id}: {', '.join(r.codes)}")
        if r.violations:
            _say(f"        {r.violations[0].message}")
    if len(failing) > 20:
        _say(f"  ... and {len(failing) - 20} more failing case(s); see the report")
    unsupported: dict[tuple[str, str], int] = {}
    for r in result.unsupported:
        key = (r.case.fault, r.detail)
        unsupported[key] = unsupported.get(key, 0) + 1
    for (fault, reason), count in unsupported.items():
        _say(f"  UNSUPPORTED {fault} ({count} scenario(s), not run, not passed): {reason}")
    codes = Counter(code for r in result.results for code in r.codes)
    verdict = "all guarantees held" if result.passed else "violations found"
    if result.passed and unsupported:
        verdict += " (on the faults this backend supports)"
    tally = ", ".join(f"{n} {v}" for v, n in sorted(result.counts.items()))
    _say(f"{len(result.results)} case(s) in {result.seconds:.1f}s: {tally}: {verdict}")
    if codes:
        _say("codes: " + ", ".join(f"{c} x{n}" for c, n in codes.most_common()))
    if report is not None:
        _say(f"report: {report}")


@main.command()
@click.argument("scenarios", nargs=-1, type=click.Path(path_type=Path))
@_policy
@_target
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Cases run in parallel.",
)
@click.option("--shard", callback=_shard, metavar="K/N", help="Run only shard K of N.")
@click.option(
    "--faults", default="all", show_default=True, metavar="LIST|all",
    help="Comma-separated faults to inject (sigkill, power-loss, torn-write, io-error, "
    "cancel-in-checkpoint, sigterm, crash-in-repair, second-writer, corrupt-committed), or all.",
)  # fmt: skip
@_timeout
@_json
@_report_dir
@click.option("--no-report", is_flag=True, help="Write no report.")
@_spawn
@_backend
@_drive
@_guarded
def explore(
    scenarios: tuple[Path, ...], policy: str | None, target: str | None, jobs: int,
    shard: Any, timeout: float, as_json: bool, report_dir: Path, no_report: bool, spawn: str,
    faults: str, backend: str | None, drive: str,
) -> int:  # fmt: skip
    """Kill the target at every boundary occurrence of every scenario.

    With no SCENARIOS, the bundled scenarios are explored.
    """
    from faultlab import lab
    from faultlab.lab import RunInfo, new_run_id, write_report

    paths: Sequence[Path] = scenarios or (lab.bundled_scenarios(),)
    for path in paths:
        if not path.exists():
            raise UserError(f"{path}: no such scenario file or directory")
    made = lab.make_target(policy=policy, target=target, backend=backend)
    lab.check_drive(drive, backend=backend)
    fault_names = lab.parse_faults(faults, drive=drive)
    loaded = lab.load_scenarios(paths)
    _say(
        f"exploring {len(loaded)} scenario(s) with the {made.label}, {jobs} job(s)"
        + (", driven over ACP" if drive == "acp" else "")
        + (f", shard {shard}" if shard else "")
    )
    with lab.workdir() as work:
        result = lab.explore_scenarios(
            loaded,
            policy=policy,
            target=target,
            jobs=jobs,
            shard=shard,
            timeout=timeout,
            workdir=work,
            progress=_Progress(),
            spawn=spawn,
            faults=fault_names,
            backend=backend,
            drive=drive,
        )
        report = None
        if not no_report:
            info = RunInfo(
                new_run_id(), tuple(sys.argv), made.command if target else None, policy,
                timeout, spawn, backend, drive,
            )  # fmt: skip
            report = write_report(result, info, report_dir)
    _print_summary(result, report)
    if not result.results:
        _say("faultlab: nothing was checked (no cases): that is a failure, not a pass")
    if as_json:
        _emit_json(
            {
                "passed": result.passed,
                "counts": result.counts,
                "unsupported": [
                    {"id": r.case.id, "fault": r.case.fault, "reason": r.detail}
                    for r in result.unsupported
                ],
                "report": str(report) if report else None,
                "cases": [r.to_json() for r in result.results],
            }
        )
    return EXIT_OK if result.passed else EXIT_VIOLATIONS


@main.command()
@click.argument("scenario", type=click.Path(path_type=Path))
@click.option(
    "--at",
    "occurrence",
    required=True,
    metavar="BOUNDARY[#N]",
    help="The boundary occurrence to kill at, e.g. tool/durable#2.",
)
@click.option("--fault", default="sigkill", show_default=True, help="The fault to inject.")
@_policy
@_target
@_timeout
@_json
@_spawn
@_backend
@_drive
@click.option("--check-determinism", is_flag=True,
              help="Run the case twice; NONDETERMINISTIC if the runs differ.")  # fmt: skip
@_guarded
def run(
    scenario: Path, occurrence: str, fault: str, policy: str | None, target: str | None,
    timeout: float, as_json: bool, spawn: str, backend: str | None, drive: str,
    check_determinism: bool,
) -> int:  # fmt: skip
    """Run one case and show its timeline."""
    from faultlab import lab
    from faultlab.lab import read_any

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
        _say(f"case {result.case.id}: {result.verdict.upper()} in {result.seconds:.2f}s")
        trace_path = Path(result.artifacts.get("trace", ""))
        if trace_path.is_file():
            _say("probe trace (crash run):")
            for line in trace_path.read_bytes().splitlines():
                message = orjson.loads(line)
                if "boundary" in message:
                    mark = "  <- killed here" if message.get("parked") else ""
                    _say(f"  {message['boundary']}#{message['n']}{mark}")
        for name in ("crashed", "repaired", "final"):
            if name in result.artifacts:
                view = read_any(result.artifacts[name])
                _say(
                    f"{name} log: {len(view.events)} event(s)"
                    + (f", {view.torn_bytes} torn byte(s) cut" if view.torn_bytes else "")
                )
        for violation in result.violations:
            _say(f"  {violation.code} [{violation.guarantee}]: {violation.message}")
    if as_json:
        _emit_json(result.to_json())
    return EXIT_OK if result.passed else EXIT_VIOLATIONS


@main.command()
@click.argument("scenario", type=click.Path(path_type=Path))
@_policy
@_target
@_timeout
@_json
@_spawn
@_backend
@_guarded
def boundaries(
    scenario: Path, policy: str | None, target: str | None, timeout: float, as_json: bool,
    spawn: str, backend: str | None,
) -> int:  # fmt: skip
    """Dry run: list every boundary occurrence the scenario reaches."""
    from faultlab import lab
    from faultlab.lab import check_coverage

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
    if reference.returncode != 0:
        _say(f"faultlab: the fault-free run exited with status {reference.returncode}:")
        _say(reference.stderr.rstrip())
        if as_json:
            _emit_json(
                {
                    "occurrences": [],
                    "error": reference.stderr.strip(),
                    "status": reference.returncode,
                }
            )
        return EXIT_VIOLATIONS
    occurrences = reference.occurrences
    for occurrence in occurrences:
        _say(occurrence)
    missing = check_coverage(reference.scenario, occurrences)
    for violation in missing:
        _say(f"BOUNDARY_NOT_REACHED: {violation.message}")
    _say(f"{len(occurrences)} occurrence(s)")
    if as_json:
        _emit_json({"occurrences": occurrences, "notReached": [v.evidence for v in missing]})
    return EXIT_VIOLATIONS if missing else EXIT_OK


@main.command()
@click.argument("log", type=click.Path(path_type=Path))
@click.option(
    "--scenario",
    type=click.Path(path_type=Path),
    help="Scenario with the tools' annotations (for the retry guidance).",
)
@_json
@_guarded
def inspect(log: Path, scenario: Path | None, as_json: bool) -> int:
    """Show a session log (JSONL file, SQLite database, or a session directory):
    timeline, expected repair, validity."""
    from faultlab.lab import find_log, inspect_log

    if log.is_dir():
        log = find_log(log)
    if not log.exists():
        raise UserError(f"{log}: no such session log")
    report = inspect_log(log, scenario)
    for line in report.lines:
        _say(line)
    if as_json:
        _emit_json(report.to_json())
    return EXIT_OK if report.healthy else EXIT_VIOLATIONS


@main.command()
@click.argument("case_id")
@_report_dir
@_json
@_spawn
@_guarded
def replay(case_id: str, report_dir: Path, as_json: bool, spawn: str) -> int:
    """Re-run exactly one recorded case.

    --report-dir is a run's directory, or a reports directory (its newest run).
    """
    from faultlab import lab
    from faultlab.lab import find_case, recorded_ids

    found = find_case(report_dir, case_id)
    if found is None:
        known = recorded_ids(report_dir)
        hint = f" (it has {len(known)} case(s), e.g. {known[0]})" if known else ""
        raise UserError(f"case {case_id!r} is not in {report_dir / 'latest'}{hint}")
    record, info = found
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
    same = result.verdict == record["verdict"] and list(result.codes) == record["codes"]
    _say(
        f"case {case_id}: {result.verdict.upper()} {list(result.codes)}; recorded "
        f"{record['verdict'].upper()} {record['codes']}: "
        + ("same verdict" if same else "DIFFERENT verdict")
    )
    for violation in result.violations:
        _say(f"  {violation.code}: {violation.message}")
    if as_json:
        _emit_json({**result.to_json(), "sameAsRecorded": same})
    return EXIT_OK if result.passed else EXIT_VIOLATIONS


@main.command()
@click.option(
    "--quick", is_flag=True, help="Small sizes and few repetitions (seconds, not minutes)."
)
@_json
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("reports/bench.json"),
    show_default=True,
    help="Where the results are written (atomically) as JSON.",
)
@_guarded
def bench(quick: bool, as_json: bool, out: Path) -> int:
    """Measure the crash loop, parallel exploration, log reload and checkpoint cost.

    Each pair is measured side by side in one run; the table shows the ratios
    and issue 4's targets.  Nothing is asserted: the exit status is 0.
    """
    from faultlab import bench as measure

    results = measure.run_all(quick, say=_say)
    measure.write_json(out, results)
    _say()
    for line in measure.table(results):
        _say(line)
    _say(f"results: {out}")
    if as_json:
        _emit_json(results)
    return EXIT_OK


@main.command()
@click.option("--quick", is_flag=True,
              help="Only each variant's documented catching cases (and the reference runtime "
              "on the same cases): the CI subset.")  # fmt: skip
@click.option("--variants", "names", metavar="NAMES", help="Comma-separated variants to run.")
@click.option(
    "--zoo", type=click.Path(dir_okay=False, path_type=Path),
    help="The zoo registry (default: tests/variants/zoo.toml of this checkout).",
)  # fmt: skip
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=2, show_default=True,
              help="Cases (or, with --quick, variants) run in parallel.")  # fmt: skip
@_timeout
@_json
@_report_dir
@click.option("--no-report", is_flag=True, help="Write no report.")
@_spawn
@_guarded
def selftest(
    quick: bool, names: str | None, zoo: Path | None, jobs: int, timeout: float, as_json: bool,
    report_dir: Path, no_report: bool, spawn: str,
) -> int:  # fmt: skip
    """Prove the oracle: every broken runtime of the zoo must be caught with its
    expected code, and the reference runtime must raise no false alarm."""
    from faultlab import lab
    from faultlab.lab import (
        default_zoo_path,
        format_table,
        load_zoo,
        run_selftest,
        write_selftest_report,
    )

    registry = load_zoo(zoo if zoo is not None else default_zoo_path())
    chosen = registry.select(names)
    mode = "quick cases" if quick else "every fault on their scenarios"
    _say(f"selftest: {len(chosen)} variant(s) of {registry.path} ({mode}), {jobs} job(s)")

    def progress(row: Any) -> None:
        shown = row.first_case or row.note
        _say(f"  {row.status:13} {row.variant} [{row.stage}] {shown} ({row.seconds:.1f}s)")

    with lab.workdir() as work:
        result = run_selftest(registry, variants=chosen, quick=quick, jobs=jobs, workdir=work,
                              spawn=spawn, timeout=timeout, progress=progress)  # fmt: skip
    _say()
    for line in format_table(result):
        _say(line)
    if not no_report:
        _say(f"report: {write_selftest_report(result, report_dir)}")
    if as_json:
        _emit_json(result.to_json())
    return EXIT_OK if result.passed else EXIT_VIOLATIONS


class _FuzzProgress:
    """One line on a terminal; a line per tenth of the examples elsewhere."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.shown: tuple[int, int, str] | None = None

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
            _say(line)


@main.command()
@click.option("--examples", "-n", type=click.IntRange(min=1), default=100, show_default=True,
              help="Examples (scenario x kill point x fault) to generate.")  # fmt: skip
@click.option("--seed", type=click.IntRange(min=0), default=None,
              help="Campaign seed (default: a random one, printed).")  # fmt: skip
@_policy
@_target
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=1, show_default=True,
              help="Streams of examples run in parallel.")  # fmt: skip
@click.option("--faults", default="sigkill", show_default=True, metavar="LIST|all",
              help="Comma-separated faults to inject, or all.")  # fmt: skip
@click.option("--check-determinism", is_flag=True,
              help="Run every example twice and compare (else only a failing one).")  # fmt: skip
@click.option("--shard", callback=_shard, metavar="K/N", help="Run only shard K of N.")
@click.option("--stream-size", type=click.IntRange(min=1), default=50, show_default=True,
              help="Examples per stream (the unit of --jobs and --shard).")  # fmt: skip
@_timeout
@_json
@_report_dir
@_spawn
@_guarded
def fuzz(
    examples: int, seed: int | None, policy: str | None, target: str | None, jobs: int,
    faults: str, check_determinism: bool, shard: Any, stream_size: int, timeout: float,
    as_json: bool, report_dir: Path, spawn: str,
) -> int:  # fmt: skip
    """Generate scenarios and kill points with Hypothesis; shrink any failure.

    A failure is written under the report directory as a scenario TOML, a
    standalone pytest regression test and a replay command.  Failing examples
    are kept in REPORT_DIR/fuzz-db and replayed first by the next campaign.
    """
    import secrets

    from faultlab import lab
    from faultlab.lab import RunInfo, fuzz_campaign, new_run_id, write_fuzz_report

    made = lab.make_target(policy=policy, target=target)
    fault_names = lab.parse_faults(faults)
    campaign_seed = secrets.randbelow(2**32) if seed is None else seed
    _say(
        f"fuzzing the {made.label}: {examples} example(s), seed {campaign_seed}, "
        f"{jobs} job(s)" + (f", shard {shard}" if shard else "")
    )
    with lab.workdir() as work:
        result = fuzz_campaign(
            policy=policy, target=target, examples=examples, seed=campaign_seed,
            faults=fault_names, jobs=jobs, shard=shard, check_determinism=check_determinism,
            timeout=timeout, workdir=work, database=report_dir / "fuzz-db", spawn=spawn,
            stream_size=stream_size, progress=_FuzzProgress(),
        )  # fmt: skip
        info = RunInfo(new_run_id(), tuple(sys.argv), made.command if target else None, policy,
                       timeout, spawn)  # fmt: skip
        report = write_fuzz_report(result, info, report_dir)
    summary = orjson.loads((report / "summary.json").read_bytes())
    tally = ", ".join(f"{n} {v}" for v, n in sorted(summary["counts"].items()))
    verdict = "all guarantees held" if result.passed else "violations found"
    _say(f"{len(result.examples)} example(s) in {result.seconds:.1f}s: {tally}: {verdict}")
    if not result.examples:
        _say("faultlab: nothing was checked (this shard has no examples): a failure, not a pass")
    for finding in summary["findings"]:
        how = "shrunk" if finding["shrunk"] else "NOT shrunk (nondeterministic)"
        _say(f"FAIL {finding['id']} ({how}): {', '.join(finding['codes'])}")
        for violation in next(
            f.result.violations for f in result.findings if f.result.case.id == finding["id"]
        ):
            _say(f"  {violation.code} [{violation.guarantee}]: {violation.message}")
        _say(f"  scenario:        {finding['scenario']}")
        _say(f"  regression test: python -m pytest {finding['regressionTest']}")
        _say(f"  replay:          {finding['replay']}")
    _say(f"report: {report}")
    if as_json:
        _emit_json({**summary, "report": str(report)})
    return EXIT_OK if result.passed else EXIT_VIOLATIONS


@main.group()
def report() -> None:
    """Work with reports."""


@report.command("merge")
@click.argument("reports", nargs=-1, required=True, type=click.Path(path_type=Path))
@_report_dir
@click.option("--allow-partial", is_flag=True, help="Merge even if some shards are missing.")
@_json
@_guarded
def report_merge(
    reports: tuple[Path, ...], report_dir: Path, allow_partial: bool, as_json: bool
) -> int:
    """Merge shard reports (run directories) into one new report.

    The shards of one `explore --shard K/N` or `fuzz --shard K/N` run give
    the report of the unsharded run: summary, cases in order, JUnit, matrix,
    failures.  Exit 1 when the merged run has violations.
    """
    from faultlab.lab import merge_reports, new_run_id

    for path in reports:
        if not path.is_dir():
            raise UserError(f"{path}: no such report directory")
    merged = merge_reports(
        list(reports), report_dir=report_dir, run_id=new_run_id(), argv=tuple(sys.argv),
        allow_partial=allow_partial,
    )  # fmt: skip
    summary = merged.summary
    tally = ", ".join(f"{n} {v}" for v, n in sorted(summary["counts"].items()))
    _say(f"merged {len(summary['merged'])} report(s): {summary['cases']} case(s): {tally}")
    _say(f"report: {merged.path}")
    if as_json:
        _emit_json({**summary, "report": str(merged.path)})
    return EXIT_OK if merged.passed else EXIT_VIOLATIONS
