# `faultlab agents check ADAPTER SCENARIO`: the fault-free case of an agent,
# explained in plain lines for someone writing its adapter: which wire and
# model it asked for, each call it made through faultlab's tool server (or
# that it made none, and the likely cause), whether it finished the
# scenario, which files it wrote under its home (the candidates for
# `[session] glob`) and any outbound address its output says was refused.
# Everything said comes from what faultlab saw: the servers' records, the
# agent's exit statuses, its output and the files in its private home.
from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson

from faultlab.lab.agents.launch import agent_launcher
from faultlab.lab.blackbox.drive import BlackboxOptions, reference_dir, run_blackbox_reference
from faultlab.lab.servers.model import FOREIGN_REQUEST, TOOL_NOT_OFFERED
from faultlab.lab.servers.records import GateRecord
from faultlab.lab.servers.script import FINAL_TEXT
from faultlab.scenario import Scenario
from faultlab.userfiles import read_tail

__all__ = ["AgentCheck", "check_agent"]

_SESSION_LIKE = (".jsonl", ".json", ".db", ".sqlite", ".sqlite3", ".zst", ".zstd", ".log")
# Phrases agents and their HTTP clients print when a connection fails.
_REFUSED = re.compile(r"(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ENETUNREACH|Connection refused|"
                      r"connection attempts failed|getaddrinfo|Network is unreachable|"
                      r"Name or service not known|ConnectError|fetch failed)", re.I)  # fmt: skip
_ADDRESS = re.compile(r"(https?://[^\s'\"<>]+|\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b|"
                      r"\b[a-z0-9-]+(?:\.[a-z0-9-]+)+\.(?:com|net|org|io|ai|dev)\b)",
                      re.I)  # fmt: skip
_MAX_HOME_FILES = 40


@dataclass(frozen=True, slots=True)
class AgentCheck:
    """The explanation (`lines`), whether the fault-free case would pass
    (`ok`), and the folder that holds its files."""

    lines: tuple[str, ...]
    ok: bool
    folder: Path


def _records(folder: Path) -> list[GateRecord]:
    try:
        data = (folder / "records.jsonl").read_bytes()
    except OSError:
        return []
    return [orjson.loads(line) for line in data.splitlines() if line.strip()]


def _output(folder: Path) -> str:
    """The agent's stdout and stderr of every run, their ends (bounded)."""
    parts = []
    for path in sorted(folder.glob("run*.std*")):
        text = read_tail(path, limit=6000).decode("utf-8", "replace").strip()
        if text:
            parts.append(text)
    return "\n".join(parts)


def _last_lines(text: str, count: int = 4) -> list[str]:
    return [line.strip()[:200] for line in text.strip().splitlines() if line.strip()][-count:]


def _home_files(home: Path) -> list[Path]:
    found: list[Path] = []
    for root, dirs, files in os.walk(home, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d != ".faultlab")  # faultlab's own MCP config
        found += [Path(root) / f for f in sorted(files)]
    return found


def _explain_calls(records: Sequence[GateRecord], scenario: Scenario,
                   output: str) -> tuple[list[str], bool]:  # fmt: skip
    """Lines on the model requests and tool calls, and whether the agent
    called the tools at all."""
    lines: list[str] = []
    requests = [r for r in records if r.get("boundary") == "model/request"]
    received = [r for r in records if r.get("boundary") == "tool/received"]
    applied = {r.get("callId") for r in records if r.get("boundary") == "tool/applied"}
    foreign = [r for r in records if r.get("fact") == FOREIGN_REQUEST]
    if not requests:
        lines.append("model: the agent sent the model server no request.")
        if foreign:
            lines.append(f"  likely cause: {len(foreign)} request(s) came without the case's "
                         "secret (401): the agent drops the base URL's path and sends no "
                         "{model_key} as its API key.")  # fmt: skip
        elif re.search(r"\bmcp\b", output, re.I) and not _REFUSED.search(output):
            lines.append("  likely cause: its MCP setup failed first (its output names MCP): "
                         "check the [[files]] MCP config and its {mcp_...} templates.")  # fmt: skip
        else:
            lines.append("  likely cause: its base URL does not reach the model server: set "
                         "the agent's base-URL variable in [env] to {model_url} (with /v1 for "
                         "OpenAI-style clients) and its key to {model_key}.")  # fmt: skip
        return lines, False
    apis = sorted({f"{r.get('api')} ({str(r.get('path') or '').split('?')[0]})"
                   for r in requests})  # fmt: skip
    models = sorted({str(r.get("model") or "?") for r in requests})
    lines.append(f"model: {len(requests)} request(s) on {', '.join(apis)}; model "
                 f"{', '.join(models)}")  # fmt: skip
    if received:
        for r in received:
            done = "applied" if r.get("callId") in applied else "not applied"
            lines.append(f"tool: {r.get('tool')} {orjson.dumps(r.get('arguments')).decode()} "
                         f"reached faultlab's tool server ({done})")  # fmt: skip
        return lines, True
    scripted = sorted({c.tool for turn in scenario.turns for step in turn.steps
                       for c in step.tool_calls})  # fmt: skip
    if not scripted:
        lines.append("tool: the scenario calls no tool.")
        return lines, True
    lines.append("tool: the agent called none of faultlab's tools "
                 f"({', '.join(scripted)}).")  # fmt: skip
    notes = [r for r in records if r.get("fact") == TOOL_NOT_OFFERED]
    offered = sorted({str(o) for n in notes for o in n.get("offered") or ()})
    alike = [o for o in offered if any(t in o for t in scripted)]
    if alike:
        lines.append(f"  likely cause: it offers the tools under other names ({', '.join(alike)}"
                     "): say how with `tool_name` in the adapter.")  # fmt: skip
    elif notes:
        shown = ", ".join(offered[:12]) or "no tools at all"
        lines.append(f"  likely cause: its requests offered none of them (offered: {shown}): "
                     "its MCP config does not reach faultlab's tool server (the [[files]] "
                     "config, the flag that names it, tools it must allow).")  # fmt: skip
    return lines, False


def check_agent(agent: str, scenario_path: str, scenario: Scenario, *, workdir: Path,
                timeout: float = 120.0) -> AgentCheck:  # fmt: skip
    """Run `agent`'s fault-free case of the scenario and explain it."""
    launcher = agent_launcher(agent)
    options = BlackboxOptions(launcher, workdir, timeout, delays_ms=(0,))
    reference = run_blackbox_reference(scenario_path, scenario, options)
    folder = reference_dir(options, scenario_path)
    records = _records(folder)
    output = _output(folder)
    lines = [f"agent {launcher.name} on {Path(scenario_path).name}, fault-free "
             f"(the files: {folder})"]  # fmt: skip
    runs = [r for r in records if r.get("fact") == "agent/exit"]
    statuses = ", ".join(str(r.get("status")) for r in runs)
    lines.append(f"runs: {len(runs)} agent process(es), exit status {statuses or 'none'}"
                 + (" (it hung: killed at the timeout)" if reference.hung else ""))  # fmt: skip
    call_lines, called = _explain_calls(records, scenario, output)
    lines += call_lines
    answers = [r for r in records if r.get("fact") == "model/response"]
    last = answers[-1] if answers else None
    # A session copy the lab refused (a folder, a link, a FIFO the glob
    # names) fails the reference, not the agent's run: said on its own line.
    ran = reference.returncode == 0 or (reference.refused is not None and not reference.hung)
    finished = (ran and last is not None and not last.get("calls")
                and str(last.get("text") or "") in (FINAL_TEXT, scenario.turns[-1].steps[-1].text))
    if finished:
        lines.append("finished: yes, every turn of the scenario ran to its last step.")
    else:
        lines.append("finished: no" + (f"; its output ends: {' | '.join(_last_lines(output))}"
                                       if output else "; it printed nothing"))  # fmt: skip
    adapter = launcher.adapter
    home = folder / "agent" / "home"
    configs = {Path(f.path.replace("{home}", str(home))) for f in adapter.files}
    session, found_session = _session_lines(home, adapter.session.glob, configs)
    lines += session
    if reference.refused is not None:
        found_session = False
        lines.append(f"session: faultlab refuses to copy what [session] glob names "
                     f"({reference.refused[1]}): name the session file(s) only")  # fmt: skip
    refused = sorted({m.group(0) for line in output.splitlines() if _REFUSED.search(line)
                      for m in _ADDRESS.finditer(line)})  # fmt: skip
    if refused:
        lines.append(f"outbound: its output names address(es) it could not reach: "
                     f"{', '.join(refused[:10])} (only the case's servers are reachable)")
    ok = finished and called and found_session
    if ok:
        lines.append("verdict: the fault-free case works; explore it with --agent")
    elif finished and called:
        lines.append("verdict: the fault-free case works, but the report will hold no session "
                     "file: fix [session] glob as said above")  # fmt: skip
    else:
        lines.append("verdict: fix the adapter as said above, then check again")
    return AgentCheck(tuple(lines), ok, folder)


def _session_lines(home: Path, pattern: str,
                   configs: set[Path]) -> tuple[list[str], bool]:  # fmt: skip
    """Which files the agent wrote under its home (apart from the adapter's
    own `[[files]]`), which the glob names; and whether it names any."""
    written = _home_files(home)
    glob = pattern.replace("{home}", str(home))
    matched = [p for p in written if fnmatch.fnmatch(str(p), glob)
               or fnmatch.fnmatch(str(p), glob.replace("**/", ""))]  # fmt: skip
    lines = [f"home: {len(written)} file(s) under its home"]
    for path in written[:_MAX_HOME_FILES]:
        if path in matched:
            mark = "  <- [session] glob"
        elif path in configs:
            mark = "  (the adapter's [[files]])"
        else:
            mark = "  (a session-file candidate)" if path.suffix in _SESSION_LIKE else ""
        lines.append(f"  {path.relative_to(home)} ({path.stat().st_size} bytes){mark}")
    if len(written) > _MAX_HOME_FILES:
        lines.append(f"  ... and {len(written) - _MAX_HOME_FILES} more")
    if not matched:
        lines.append(f"session: the glob {pattern} matched no file it wrote: point "
                     "[session] glob at its session file (a candidate above)")  # fmt: skip
    return lines, bool(matched)
