# How the case commands talk to a person while they run and when they end:
# the options `--color`, `-q`, `-v`, the progress line (a count, failures so
# far, the time left, and a note when the fault-free reference runs are slow
# to start), explore's summary table and the grouped failures (rendered by
# faultlab.lab.report.console; this module only prints).
from __future__ import annotations

import shlex
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from faultlab.cli.output import say

if TYPE_CHECKING:
    from faultlab.lab import CaseResult, ExploreResult, Style

__all__ = [
    "Progress", "color", "fault_line", "print_failures", "print_summary", "quiet", "run_command",
    "style", "verbose",
]  # fmt: skip

color = click.option(
    "--color", "color_choice", type=click.Choice(["auto", "always", "never"]), default="auto",
    show_default=True, help="Colour the output: auto colours a terminal unless NO_COLOR is set.",
)  # fmt: skip
verbose = click.option("-v", "--verbose", count=True,
                       help="More output: a line per case, every failing id and harm.")  # fmt: skip
quiet = click.option("-q", "--quiet", count=True,
                     help="Less output: no progress, one line per violation code.")  # fmt: skip


def style(choice: str) -> Style:
    from faultlab.lab import Style, use_color

    return Style(use_color(choice, isatty=sys.stderr.isatty()))


class Progress:
    """A one-line progress display on a terminal, sparse lines elsewhere, a
    line per case with -v, nothing with -q.  Until the first case ends, a
    note after `slow` seconds says the reference runs are still going."""

    def __init__(
        self, *, verbosity: int = 0, paint: Style | None = None, slow: float = 5.0,
        waiting: str = "still waiting for the fault-free reference run(s)",
    ) -> None:  # fmt: skip
        from faultlab.lab import Style

        self.tty = sys.stderr.isatty()
        self.verbosity = verbosity
        self.paint = paint or Style()
        self.failed = 0
        self.started = time.monotonic()
        self.first: float | None = None
        self._timer = threading.Timer(slow, self._slow, args=(waiting, slow))
        self._timer.daemon = True
        if verbosity >= 0:
            self._timer.start()

    def _slow(self, waiting: str, slow: float) -> None:
        if self.first is None:
            say(f"{waiting} ({slow:.0f}s so far; a slow target or many scenarios)")

    def close(self) -> None:
        self._timer.cancel()

    def __call__(self, result: CaseResult, done: int, total: int) -> None:
        from faultlab.lab import progress_text

        now = time.monotonic()
        if self.first is None:
            self.first = now
            self._timer.cancel()
        self.failed += 1 if result.failed else 0
        if self.verbosity < 0:
            return
        if self.verbosity > 0:
            say(f"{self.paint.verdict(result.verdict):5} {result.case.id} "
                f"({result.seconds:.2f}s) [{done}/{total}]",
                color=self.paint.color or None)  # fmt: skip
            return
        line = progress_text(done, total, self.failed, now - self.started,
                             f"{result.verdict:5} {result.case.id}")  # fmt: skip
        if self.tty:
            click.echo(f"\r\x1b[K{line}", err=True, nl=done == total)
        elif done == total or done % max(1, total // 10) == 0:
            say(line)


def print_failures(
    failing: Sequence[CaseResult], *, replay: Callable[[CaseResult], str],
    report: Path | None, verbosity: int, paint: Style,
) -> None:  # fmt: skip
    """The failing cases grouped by code (faultlab.lab.report.console)."""
    from faultlab.lab import group_failures, render_failures

    groups = group_failures(failing, replay=replay, report=report)
    for line in render_failures(groups, style=paint, verbosity=verbosity):
        say(line, color=paint.color or None)
    if groups and verbosity >= 0:
        say()


def fault_line(per_fault: Mapping[str, Mapping[str, int]]) -> str:
    """Crash cases that ran per fault, and those that could not (unsupported);
    `per_fault` as in summary.json's `perFault`."""
    parts = [
        f"{fault} {t['ran']} ran"
        + (f" + {t['unsupported']} unsupported" if t["unsupported"] else "")
        for fault, t in per_fault.items()
    ]
    return "crash cases per fault: " + (", ".join(parts) or "none ran")


def print_summary(
    result: ExploreResult, report: Path | None, *, replay: Callable[[CaseResult], str],
    verbosity: int = 0, paint: Style | None = None,
) -> None:  # fmt: skip
    from faultlab.lab import Style

    paint = paint or Style()
    if verbosity >= 0:
        _print_table(result)
    failing = [r for r in result.results if r.failed]
    print_failures(failing, replay=replay, report=report, verbosity=verbosity, paint=paint)
    unsupported: dict[tuple[str, str], int] = {}
    for r in result.unsupported:
        key = (r.case.fault, r.detail)
        unsupported[key] = unsupported.get(key, 0) + 1
    if verbosity >= 0:
        for (fault, reason), count in unsupported.items():
            say(f"  UNSUPPORTED {fault} ({count} scenario(s), not run, not passed): {reason}")
    verdict = paint("all guarantees held", "pass") if result.passed else paint(
        "violations found", "fail")  # fmt: skip
    if result.passed and unsupported:
        verdict += " (on the faults this backend supports)"
    tally = ", ".join(f"{n} {v}" for v, n in sorted(result.counts.items())) or "no cases"
    if result.references and verbosity >= 0:
        from faultlab import lab

        say(lab.ground_truth_line(result))
    forced = paint.color or None
    if result.stopped:
        say(paint(f"stopped after {len(failing)} failing case(s) (-x/--maxfail): the cases "
                  "after them did not run", "warn"), color=forced)  # fmt: skip
    say(f"{len(result.results)} case(s) in {result.seconds:.1f}s: {tally}: {verdict}",
        color=forced)
    if report is not None:
        say(f"report: {report}")


def _print_table(result: ExploreResult) -> None:
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


def run_command(
    *, policy: str | None, target: str | None, backend: str | None, drive: str
) -> Callable[[CaseResult], str]:
    """With no report to replay from: the `faultlab run` of a case."""

    def command(result: CaseResult) -> str:
        argv = ["faultlab", "run", result.case.scenario, "--at", result.case.occurrence,
                "--fault", result.case.fault]  # fmt: skip
        for name, value in (("policy", policy), ("target", target), ("backend", backend)):
            if value is not None:
                argv += [f"--{name}", value]
        if drive != "classic":
            argv += ["--drive", drive]
        return shlex.join(argv)

    return command
