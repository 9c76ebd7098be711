# The commands that read what runs left behind: `inspect` (one session log:
# its timeline, expected repair and validity) and the `report` group with
# `report merge` (shard reports into one).  They mirror `faultlab.lab`'s
# report room, which they call; the lab is imported inside each command.
from __future__ import annotations

import sys
from pathlib import Path

import click

from faultlab.cli import options as opt
from faultlab.cli.output import EXIT_OK, EXIT_VIOLATIONS, UserError, emit_json, guarded, say
from faultlab.userfiles import check_exists

__all__ = ["inspect", "report"]


@click.command(epilog=opt.epilog(
    "faultlab inspect reports/latest/failures/payment.toml_model_chunk_1_sigkill/crashed.jsonl",
    "faultlab inspect session.db --json                  # a SQLite session",
))
@click.argument("log", type=click.Path(path_type=Path))
@click.option(
    "--scenario",
    type=click.Path(path_type=Path),
    help="Scenario with the tools' annotations (for the retry guidance).",
)
@click.option(
    "--reader", metavar="NAME",
    help="The log is an agent's own session log: claude-code, codex, openai-agents-sqlite, "
    "deepseek-harness, or a reader of your own as module:function (docs/agents.md).",
)  # fmt: skip
@opt.json
@guarded
def inspect(log: Path, scenario: Path | None, as_json: bool, reader: str | None) -> int:
    """Show a session log (JSONL file, SQLite database, or a session directory):
    timeline, expected repair, validity."""
    from faultlab import lab

    if reader is not None:
        from faultlab.lab import inspect_agent_log

        check_exists(log, what="session log file")
        found = inspect_agent_log(log, reader)
        for line in found.lines:
            say(line)
        if as_json:
            emit_json(found.to_json())
        return EXIT_OK if found.healthy else EXIT_VIOLATIONS
    if check_exists(log, what="session log", directory_ok=True):  # a loop, a FIFO: exit 2
        log = lab.find_log(log)
    report = lab.inspect_log(log, scenario)
    for line in report.lines:
        say(line)
    if as_json:
        emit_json(report.to_json())
    return EXIT_OK if report.healthy else EXIT_VIOLATIONS


@click.group()
def report() -> None:
    """Work with reports."""


@report.command("merge")
@click.argument("reports", nargs=-1, required=True, type=click.Path(path_type=Path))
@opt.report_dir
@click.option("--allow-partial", is_flag=True, help="Merge even if some shards are missing.")
@opt.json
@guarded
def report_merge(
    reports: tuple[Path, ...], report_dir: Path, allow_partial: bool, as_json: bool
) -> int:
    """Merge shard reports (run directories) into one new report.

    The shards of one `explore --shard K/N` or `fuzz --shard K/N` run give
    the report of the unsharded run: summary, cases in order, JUnit, matrix,
    failures.  Exit 1 when the merged run has violations.
    """
    from faultlab import lab

    for path in reports:
        if not path.is_dir():
            raise UserError(f"{path}: no such report directory")
    merged = lab.merge_reports(
        list(reports), report_dir=report_dir, run_id=lab.new_run_id(), argv=tuple(sys.argv),
        allow_partial=allow_partial,
    )  # fmt: skip
    summary = merged.summary
    tally = ", ".join(f"{n} {v}" for v, n in sorted(summary["counts"].items()))
    say(f"merged {len(summary['merged'])} report(s): {summary['cases']} case(s): {tally}")
    say(f"report: {merged.path}")
    if as_json:
        emit_json({**summary, "report": str(merged.path)})
    return EXIT_OK if merged.passed else EXIT_VIOLATIONS
