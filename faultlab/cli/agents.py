# `faultlab agents install [NAME...]` and `faultlab agents list`: the real
# agents faultlab crash-tests, at the versions their adapters pin, in a cache
# directory (FAULTLAB_AGENTS_DIR); `agents new` writes a commented adapter
# file and `agents check` explains an agent's fault-free case.  Thin: the
# logic is faultlab.lab.agents and faultlab.lab.blackbox.check.
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import click

from faultlab.cli import options as opt
from faultlab.cli.output import EXIT_OK, EXIT_VIOLATIONS, emit_json, guarded, say

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


@agents.command("new")
@click.argument("name")
@click.option("--wire", required=True,
              type=click.Choice(["anthropic", "openai-chat", "openai-responses", "gemini"]),
              help="The model API the agent speaks.")  # fmt: skip
@click.option("--version", "version", default="0.0.0", show_default=True,
              help="The agent's version to pin.")  # fmt: skip
@click.option("--package", help="Its npm/pip package, when not NAME.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write it (default: NAME.toml here).")  # fmt: skip
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
@guarded
def new(name: str, wire: str, version: str, package: str | None, output: Path | None,
        force: bool) -> int:  # fmt: skip
    """Write a commented adapter file for an agent faultlab does not bundle."""
    from faultlab import lab

    where = output or Path(f"{name}.toml")
    text = lab.adapter_template(name, wire, version=version, package=package)
    if where.exists() and not force:
        raise lab.LabUsageError(f"{where} exists (--force overwrites it)")
    try:
        where.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise lab.LabUsageError(f"cannot write {where}: {exc.strerror}") from None
    say(f"{where}: written; fill in its install and commands, then run: "
        f"faultlab agents check {where} scenarios/payment.toml")  # fmt: skip
    return EXIT_OK


@agents.command("check")
@click.argument("agent")
@click.argument("scenario", type=click.Path(path_type=Path))
@click.option("--timeout", type=float, default=120.0, show_default=True,
              help="Seconds each agent process may take.")  # fmt: skip
@click.option("--keep", type=click.Path(file_okay=False, path_type=Path),
              help="Keep the run's files (requests, output, the agent's home) in this folder.")
@opt.json
@guarded
def check(agent: str, scenario: Path, timeout: float, keep: Path | None, as_json: bool) -> int:
    """Run AGENT's fault-free case of SCENARIO and say what happened, in plain lines."""
    from faultlab import lab

    loaded = lab.load_scenarios([scenario])
    if len(loaded) != 1:
        raise lab.LabUsageError(f"{scenario}: give one scenario file, not {len(loaded)}")
    path, spec = loaded[0]
    with lab.workdir(keep) as where:
        found = lab.check_agent(agent, path, spec, workdir=where, timeout=timeout)
    for line in found.lines:
        say(line)
    if keep is None:
        say("(its files were removed; --keep DIR keeps them)")
    if as_json:
        emit_json({"ok": found.ok, "lines": list(found.lines), "folder": str(found.folder)})
    return EXIT_OK if found.ok else EXIT_VIOLATIONS
