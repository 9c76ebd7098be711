# How the case commands talk to a person while they run and when they end:
# the options `--color`, `-q`, `-v`, the progress line (a count, failures so
# far, the time left, and a note when the fault-free reference runs are slow
# to start) and the grouped failures (rendered by faultlab.lab.report.console;
# this module only prints).
from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from faultlab.cli.output import say

if TYPE_CHECKING:
    from faultlab.lab import CaseResult
    from faultlab.lab.report.console import Style

__all__ = ["Progress", "color", "print_failures", "quiet", "style", "verbose"]

color = click.option(
    "--color", "color_choice", type=click.Choice(["auto", "always", "never"]), default="auto",
    show_default=True, help="Colour the output: auto colours a terminal unless NO_COLOR is set.",
)  # fmt: skip
verbose = click.option("-v", "--verbose", count=True,
                       help="More output: a line per case, every failing id and harm.")  # fmt: skip
quiet = click.option("-q", "--quiet", count=True,
                     help="Less output: no progress, one line per violation code.")  # fmt: skip


def style(choice: str) -> Style:
    from faultlab.lab.report.console import Style, use_color

    return Style(use_color(choice, isatty=sys.stderr.isatty()))


class Progress:
    """A one-line progress display on a terminal, sparse lines elsewhere, a
    line per case with -v, nothing with -q.  Until the first case ends, a
    note after `slow` seconds says the reference runs are still going."""

    def __init__(
        self, *, verbosity: int = 0, paint: Style | None = None, slow: float = 5.0,
        waiting: str = "still waiting for the fault-free reference run(s)",
    ) -> None:  # fmt: skip
        from faultlab.lab.report.console import Style

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
        from faultlab.lab.report.console import progress_text

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
    from faultlab.lab.report.console import group_failures, render_failures

    groups = group_failures(failing, replay=replay, report=report)
    for line in render_failures(groups, style=paint, verbosity=verbosity):
        say(line, color=paint.color or None)
    if groups and verbosity >= 0:
        say()
