# The `faultlab` command line: parse, call the lab, print, exit.  Logic lives
# in `faultlab.lab`; people's output goes to stderr, `--json` output to
# stdout.  Exit codes: 0 guarantees held, 1 violations, 2 usage or scenario
# error, 3 internal error, 130 interrupted (`output`).  This module is the
# group `main` (the console script and `python -m faultlab`); the commands
# live in `cases` (explore, run, boundaries, replay), `reports` (inspect,
# report merge), `campaigns` (bench, selftest, fuzz) and `agents` (install,
# list the real agents), their shared options in `options`, and how a run
# talks to a person (progress, colour, the grouped failures) in `show`.
from __future__ import annotations

import click

from faultlab.cli import agents, campaigns, cases, replaying, reports
from faultlab.cli.options import epilog
from faultlab.cli.output import FaultlabGroup

__all__ = ["main"]


@click.group(
    cls=FaultlabGroup, context_settings={"help_option_names": ["-h", "--help"]},
    epilog=epilog(
        "faultlab explore scenarios/payment.toml --policy turn-only   # fails: a double charge",
        "faultlab run scenarios/payment.toml --at tool/effect#1       # one case, its timeline",
        "faultlab replay 'payment.toml::tool/effect#1[sigkill]'       # again, from the report",
    ),
)  # fmt: skip
@click.version_option(package_name="faultlab")
def main() -> None:
    """Crash-test the durability of AI agent runtimes at semantic boundaries."""


# The order the commands were defined in; `--help` lists them alphabetically.
main.add_command(cases.explore)
main.add_command(cases.run)
main.add_command(replaying.boundaries)
main.add_command(reports.inspect)
main.add_command(replaying.replay)
main.add_command(campaigns.bench)
main.add_command(campaigns.selftest)
main.add_command(campaigns.fuzz)
main.add_command(reports.report)
main.add_command(agents.agents)
