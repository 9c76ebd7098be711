# The options several commands share, defined once so that their names,
# defaults and help read the same everywhere (`docs/cli.md`), and the value
# callbacks they need.  The commands use them as `@opt.policy`, `@opt.json`.
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from faultlab.lab import Shard

__all__ = [
    "agent",
    "backend",
    "check_agent_alone",
    "drive",
    "json",
    "no_report",
    "parse_shard",
    "policy",
    "report_dir",
    "shard",
    "spawn",
    "target",
    "timeout",
]


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
    "--timeout", type=click.FloatRange(min=0.1), default=60.0, show_default=True,
    help="Seconds a child may take to reach its kill point or to exit.",
)  # fmt: skip
json = click.option("--json", "as_json", is_flag=True, help="Machine output on stdout.")
backend = click.option(
    "--backend", type=click.Choice(["jsonl", "sqlite"]),
    help="Persistence backend of the target (default: each scenario's own; docs/backends.md).",
)  # fmt: skip
spawn = click.option(
    "--spawn", type=click.Choice(["fork", "exec"]), default="fork", show_default=True,
    help="fork: children of the reference runtime come from a fork server (fast); "
    "exec: a fresh interpreter per child (the fidelity reference). --target always execs.",
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
