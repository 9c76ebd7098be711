# `faultlab agents new NAME --wire WIRE`: a commented adapter file a user
# fills in for an agent faultlab does not bundle.  Each wire gets the
# environment its agents usually read for their base URL and key; every
# field is explained where it stands, and the file loads as it is written
# (a test keeps it so), so `faultlab agents check` can run it at once.
from __future__ import annotations

from dataclasses import dataclass

from faultlab.lab.agents.adapter import parse_adapter
from faultlab.lab.errors import LabUsageError

__all__ = ["WIRES", "adapter_template"]


@dataclass(frozen=True, slots=True)
class _Wire:
    api: str
    env: tuple[tuple[str, str, str], ...]  # (variable, value, why)


WIRES: dict[str, _Wire] = {
    "anthropic": _Wire("anthropic", (
        ("ANTHROPIC_BASE_URL", "{model_url}", "the Messages API's base, without /v1"),
        ("ANTHROPIC_API_KEY", "{model_key}", "the case's secret as the key"))),
    "openai-chat": _Wire("chat", (
        ("OPENAI_BASE_URL", "{model_url}/v1", "Chat Completions: most clients add /chat/..."),
        ("OPENAI_API_KEY", "{model_key}", "the case's secret as the key"))),
    "openai-responses": _Wire("responses", (
        ("OPENAI_BASE_URL", "{model_url}/v1", "the Responses API: clients add /responses"),
        ("OPENAI_API_KEY", "{model_key}", "the case's secret as the key"))),
    "gemini": _Wire("gemini", (
        ("GOOGLE_GEMINI_BASE_URL", "{model_url}", "Gemini CLI; google-genai: http_options"),
        ("GEMINI_API_KEY", "{model_key}", "sent as x-goog-api-key"))),
}  # fmt: skip

_TEMPLATE = '''\
# An adapter for {name}: how faultlab installs it, points it at its scripted
# model server and MCP tool server, runs a first prompt and a resume, and
# where it keeps its session.  docs/agents.md ("The adapter file") explains
# every field; `faultlab agents check {name}.toml scenarios/payment.toml`
# runs the fault-free case and says what went wrong, in plain lines.
name = "{name}"
# The pinned version; the first package below must be pinned to it.
version = "{version}"
description = "{name} (written with faultlab agents new)"
# The wire the agent speaks: anthropic, chat, responses or gemini.
api = "{api}"
# The model name the agent is told to use (any name: the model is scripted).
model = "faultlab-model"
# How the agent names faultlab's MCP tools on the wire, if not
# mcp__faultlab__TOOL: opencode "{{mcp_server}}_{{tool}}", Gemini CLI
# "mcp_{{mcp_server}}_{{tool}}" (a list is tried in order).
# tool_name = "{{mcp_server}}_{{tool}}"

# The first prompt, headless (print mode), as an argv.  Templates:
# {{binary}} the installed executable, {{prompt}}, {{session_id}} (a UUID per
# case), {{home}}, {{workdir}}, {{mcp_config}} (a standard mcpServers JSON file),
# {{mcp_argv_json}} (the MCP command and args as one JSON array).
first = ["{{binary}}", "-p", "{{prompt}}"]
# The same session resumed after the kill, with the next prompt.  An agent
# that resumes its latest session (--continue) needs no id; one that takes
# an id may get {{session_id}} in `first` too.
resume = ["{{binary}}", "--continue", "-p", "{{prompt}}"]

[install]
# npm (name@version) or pip (name==version); builtin: nothing to install.
kind = "npm"
packages = ["{package}@{version}"]
# The executable, relative to the install folder.
binary = "node_modules/.bin/{name}"

[env]
# A private home per case: the agent's config and session land there.
HOME = "{{home}}"
{env}
# Turn off what would leave the machine (telemetry, update checks), e.g.
# DISABLE_TELEMETRY = "1"

# The agent's own config files, written before every launch (paths under
# {{home}}/ or {{workdir}}/).  Most agents read their MCP servers from one:
# {{mcp_command_json}} and {{mcp_args_json}}, or {{mcp_argv_json}}, are valid JSON.
[[files]]
path = "{{home}}/.{name}/settings.json"
content = \'\'\'
{{"mcpServers": {{"faultlab": {{"command": {{mcp_command_json}}, "args": {{mcp_args_json}}}}}}}}
\'\'\'

[session]
# Where the agent writes its own session (a glob); `agents check` lists the
# files it wrote under its home to choose from.  `reader` is optional: a
# bundled reader's name, or a function of your own as module:function.
glob = "{{home}}/.{name}/**/*.jsonl"
'''


def adapter_template(name: str, wire: str, *, version: str = "0.0.0",
                     package: str | None = None) -> str:  # fmt: skip
    """A commented adapter file for agent `name` on `wire` (one of WIRES)."""
    if wire not in WIRES:
        raise LabUsageError(f"unknown wire {wire!r} (choose: {', '.join(WIRES)})")
    chosen = WIRES[wire]
    env = "\n".join(f'{variable} = "{value}"  # {why}' for variable, value, why in chosen.env)
    text = _TEMPLATE.format(name=name, version=version, api=chosen.api, env=env,
                            package=package or name)  # fmt: skip
    parse_adapter(text, source=f"{name}.toml")  # a name or version it cannot hold: one line
    return text
