# The options several commands share, defined once so that their names,
# defaults and help read the same everywhere (`docs/cli.md`), and the value
# callbacks they need.  The commands use them as `@opt.policy`, `@opt.json`.
# It is also the one place that reads the numbers of every option (`Number`,
# `whole`): finite, within documented bounds (docs/cli.md, "Limits"), or a
# one-line usage error (exit 2) -- never a nan, an inf or a 1e308 that
# overflows deep inside the lab.  A timeout's range is the lab's own check
# (`Timeout` calls `faultlab.lab.check_timeout`, as every entry point does).
from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from faultlab.lab import Shard

__all__ = [
    "MAX_JOBS",
    "Number",
    "Timeout",
    "agent",
    "backend",
    "check_agent_alone",
    "drive",
    "epilog",
    "json",
    "no_report",
    "no_trace_cache",
    "parse_shard",
    "policy",
    "report_dir",
    "shard",
    "spawn",
    "target",
    "timeout",
    "whole",
]

MAX_JOBS = 256
_WHOLE = re.compile(r"[+-]?[0-9]{1,19}")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


class Number(click.ParamType["float | int", object]):
    """A number of an option: whole or not, within [low, high], written in
    ASCII digits (no nan, inf, hex, underscores or other scripts' digits)."""

    def __init__(self, low: float, high: float, *, whole: bool, unit: str = "") -> None:
        self.low, self.high, self.whole, self.unit = low, high, whole, unit
        self.name = "integer" if whole else "float"

    def convert(self, value: object, param: click.Parameter | None,
                ctx: click.Context | None) -> float | int:  # fmt: skip
        number = self.parse(value, param, ctx)
        if not math.isfinite(number) or not self.low <= number <= self.high:
            self.fail(f"{_shown(value)} is out of range{self._bounds()}", param, ctx)
        return number

    def parse(self, value: object, param: click.Parameter | None,
              ctx: click.Context | None) -> float | int:  # fmt: skip
        """The number written (its syntax checked, its range not)."""
        text = str(value).strip()
        shown = _shown(value)
        kind = "a whole number" if self.whole else "a number"
        if self.whole and isinstance(value, int) and not isinstance(value, bool):
            number: float | int = value
        elif not self.whole and isinstance(value, int | float) and not isinstance(value, bool):
            number = float(value)
        elif re.fullmatch(_WHOLE if self.whole else _DECIMAL, text):
            number = int(text) if self.whole else float(text)
        elif not self.whole and text.lower().lstrip("+-") in ("nan", "inf", "infinity"):
            self.fail(f"{shown!r} is not a finite number{self._bounds()}", param, ctx)
        else:
            self.fail(f"{shown!r} is not {kind}{self._bounds()}", param, ctx)
        return number

    def _bounds(self) -> str:
        low, high = (f"{int(b)}" if self.whole or b == int(b) else f"{b}"
                     for b in (self.low, self.high))  # fmt: skip
        return f" (from {low} to {high}{self.unit})"


def _shown(value: object) -> str:
    text = str(value).strip()
    return text if len(text) <= 30 else text[:27] + "..."


class Timeout(Number):
    """`--timeout`: a number of seconds as the CLI reads numbers, its range
    checked by the lab's `check_timeout` (the one check of every timeout)."""

    def __init__(self) -> None:
        from faultlab import lab

        super().__init__(lab.MIN_TIMEOUT, lab.MAX_TIMEOUT, whole=False, unit=" seconds")

    def convert(self, value: object, param: click.Parameter | None,
                ctx: click.Context | None) -> float:  # fmt: skip
        from faultlab import lab

        try:
            return lab.check_timeout(self.parse(value, param, ctx))
        except lab.LabUsageError as exc:
            self.fail(str(exc), param, ctx)


def whole(low: int, high: int) -> Number:
    return Number(low, high, whole=True)


def parse_shard(_ctx: click.Context, _param: click.Parameter, value: str | None) -> Shard | None:
    """`--shard K/N` as the lab's `Shard` (click's error if it is malformed)."""
    if value is None:
        return None
    from faultlab import lab

    try:
        return lab.parse_shard(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


policy = click.option(
    "--policy", type=click.Choice(["semantic", "turn-only", "every-event"]),
    help="Checkpoint policy for the reference runtime (default: each scenario's own).",
)  # fmt: skip
target = click.option(
    "--target", metavar="CMD",
    help="Crash-test this command instead of the reference runtime (see docs/probe-protocol.md).",
)  # fmt: skip
timeout = click.option(
    "--timeout", type=Timeout(), default=60.0, show_default=True,
    help="Seconds a child may take to reach its kill point or to exit.",
)  # fmt: skip
json = click.option("--json", "as_json", is_flag=True, help="Machine output on stdout.")
backend = click.option(
    "--backend", type=click.Choice(["jsonl", "sqlite"]),
    help="Persistence backend of the target (default: each scenario's own; docs/backends.md).",
)  # fmt: skip
spawn = click.option(
    "--spawn", type=click.Choice(["fork", "exec"]), default="fork", show_default=True,
    help="fork: children of the reference runtime (or of an --app) come from a fork server "
    "(fast); exec: a fresh interpreter per child (the fidelity reference). --target always "
    "execs.",
)  # fmt: skip


def _no_trace_cache(_ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """--no-trace-cache: the environment's way, for this command and what it starts."""
    if value:
        os.environ["FAULTLAB_TRACE_CACHE"] = "off"


no_trace_cache = click.option(
    "--no-trace-cache", is_flag=True, expose_value=False, callback=_no_trace_cache,
    help="Trace every reference run anew: never serve one from, nor keep one in, the cache "
    "of traced runs (~/.cache/faultlab/traces; FAULTLAB_TRACE_CACHE=off|DIR).",
)  # fmt: skip
drive = click.option(
    "--drive", type=click.Choice(["classic", "acp"]), default="classic", show_default=True,
    help="classic: the target runs a scenario by itself; acp: the lab drives an ACP agent "
    "(python -m faultlab.runtime.acp, or --target) as a client (docs/acp.md).",
)  # fmt: skip
def _report_path(_ctx: click.Context, _param: click.Parameter, value: str) -> Path:
    """--report-dir as a Path; an empty one is refused (it would mean the
    current directory)."""
    if not value.strip():
        raise click.BadParameter("must name a directory, not be empty")
    return Path(value)


report_dir = click.option(
    "--report-dir", type=click.Path(file_okay=False), default="reports", callback=_report_path,
    show_default=True, help="Where reports are written.",
)  # fmt: skip
shard = click.option("--shard", callback=parse_shard, metavar="K/N", help="Run only shard K of N.")
no_report = click.option("--no-report", is_flag=True, help="Write no report.")
agent = click.option(
    "--agent", metavar="NAME|FILE",
    help="Crash-test a black-box agent: a bundled adapter (claude-code, codex, openai-agents, "
    "deepseek-harness, reference) or an adapter file (docs/agents.md).",
)  # fmt: skip


def check_agent_alone(agent: str | None, **others: object) -> None:
    """--agent names the target by itself: no classic-target option beside it."""
    if agent is None:
        return
    for name, value in others.items():
        if value not in (None, False, "classic", "fork"):
            from faultlab.cli.output import UserError

            raise UserError(f"--agent cannot be combined with --{name.replace('_', '-')}")


EXITS = ("Exit status: 0 every guarantee held, 1 violations found, 2 usage or scenario "
         "error, 3 a bug in faultlab, 130 interrupted.")  # fmt: skip


def epilog(*examples: str, exits: str = EXITS) -> str:
    """The end of a command's --help: a few examples (`command  # why`), kept
    as written, then the exit codes."""
    return "\b\nExamples:\n" + "\n".join(f"  {e}" for e in examples) + "\n\n" + exits
