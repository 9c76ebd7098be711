# `faultlab agents install [NAME...]` and `faultlab agents list`: the real
# agents faultlab crash-tests, at the versions their adapters pin, in a cache
# directory (FAULTLAB_AGENTS_DIR).  Thin: the logic is faultlab.lab.agents.
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import click

from faultlab.cli import options as opt
from faultlab.cli.output import EXIT_OK, emit_json, guarded, say

__all__ = ["agents"]


@click.group()
def agents() -> None:
    """Install and list the real agents (Claude Code, Codex, ...) faultlab drives."""


@agents.command("install")
@click.argument("names", nargs=-1)
@click.option("--force", is_flag=True, help="Reinstall even if the pinned version is there.")
@guarded
def install(names: tuple[str, ...], force: bool) -> int:
    """Install the named agents (bundled names or adapter .toml paths); all if none."""
    from faultlab import lab

    chosen = ([lab.find_adapter(n) for n in names] if names
              else lab.bundled_adapters())  # fmt: skip
    for adapter in chosen:
        lab.install_agent(adapter, force=force, say=say)
    return EXIT_OK


@agents.command("list")
@opt.json
@guarded
def list_(as_json: bool) -> int:
    """Show each bundled agent, its pinned version and whether it is installed."""
    from faultlab import lab

    rows = lab.list_agents()
    if as_json:
        emit_json([asdict(r) for r in rows])
        return EXIT_OK
    for r in rows:
        mark = "installed" if r.installed else "missing"
        say(f"{r.name:<18} {r.version:<10} {r.kind:<8} {mark:<9} {r.where}")
    return EXIT_OK


@agents.command("findings")
@click.argument("reports", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False, path_type=Path))  # fmt: skip
@click.option("--write", "document", type=click.Path(dir_okay=False, path_type=Path),
              help="Rewrite the findings table between its markers in this file "
              "(e.g. docs/agents.md) instead of printing it.")  # fmt: skip
@guarded
def findings(reports: tuple[Path, ...], document: Path | None) -> int:
    """The findings table of black-box runs (explore --agent reports)."""
    from faultlab.lab import findings_markdown, read_findings, write_findings

    markdown = findings_markdown(read_findings(reports))
    if document is None:
        click.echo(markdown, nl=False)
    else:
        write_findings(document, markdown)
        say(f"{document}: findings table rewritten from {len(reports)} report(s)")
    return EXIT_OK
