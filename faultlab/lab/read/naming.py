# How an agent names faultlab's MCP tools on the model wire, and back: the
# one rule the wire reader (read/wire.py: a request's calls -> the scenario's
# bare names) and the scripted model server (an answer calls a tool by the
# name the agent offered) share, so they can never disagree.  Agents differ:
# Claude Code `mcp__faultlab__charge_card`, Codex `charge_card` in namespace
# `mcp__faultlab__`, opencode `faultlab_charge_card`, Gemini CLI
# `mcp_faultlab_charge_card`.  An adapter names its agent's rule with
# `tool_name` patterns (docs/agents.md); without any, the built-in rule
# below (`bare_tool_name`) covers the first two.
from __future__ import annotations

import functools
import re
from collections.abc import Collection
from dataclasses import dataclass

__all__ = [
    "BUILT_IN_NAMING",
    "DEFAULT_MCP_SERVER",
    "TOOL_NAME_VARIABLES",
    "ToolNaming",
    "bare_tool_name",
    "check_tool_pattern",
]

DEFAULT_MCP_SERVER = "faultlab"  # the MCP server's name in every adapter's config
TOOL_NAME_VARIABLES = ("mcp_server", "tool")
_VARIABLE = re.compile(r"\{([^{}]*)\}")


def bare_tool_name(name: str, namespace: str | None = None, known: Collection[str] = ()) -> str:
    """The scenario's name for a tool as the agent named it on the wire: a
    namespace or `mcp__server__` prefix removed.  With `known` names, the first
    candidate that is one of them wins; otherwise the shortest candidate."""
    candidates = [name]
    if namespace:
        joined = namespace if namespace.endswith("__") else namespace + "__"
        candidates.append(name.removeprefix(joined).removeprefix(namespace))
    if name.startswith("mcp__") and name.count("__") >= 2:
        candidates.append(name.split("__", 2)[2])
    if "__" in name:
        candidates.append(name.rsplit("__", 1)[1])
    for candidate in candidates:
        if candidate in known:
            return candidate
    return min((c for c in candidates if c), key=len, default=name)


def check_tool_pattern(pattern: str) -> str | None:
    """Why `pattern` is not a tool-name pattern (None when it is one): it
    must hold `{tool}` once and no variable but `{mcp_server}` besides."""
    names = _VARIABLE.findall(pattern)
    unknown = [n for n in names if n not in TOOL_NAME_VARIABLES]
    if unknown:
        return (f"unknown variable {{{unknown[0]}}} (known: "
                f"{', '.join('{' + v + '}' for v in TOOL_NAME_VARIABLES)})")  # fmt: skip
    if names.count("tool") != 1:
        return "must hold {tool} exactly once, e.g. \"{mcp_server}_{tool}\""
    return None


@functools.lru_cache(maxsize=64)
def _regex(pattern: str, server: str) -> re.Pattern[str]:
    parts = []
    for index, piece in enumerate(_VARIABLE.split(pattern)):
        if index % 2 == 0:
            parts.append(re.escape(piece))
        else:
            parts.append("(?P<tool>.+)" if piece == "tool" else re.escape(server))
    return re.compile("".join(parts))


@dataclass(frozen=True, slots=True)
class ToolNaming:
    """An agent's rule for naming faultlab's MCP tools: `patterns` such as
    `{mcp_server}_{tool}`, tried in order (none: the built-in rule),
    `server` the MCP server's name in the agent's config."""

    patterns: tuple[str, ...] = ()
    server: str = DEFAULT_MCP_SERVER

    def __post_init__(self) -> None:
        for pattern in self.patterns:
            problem = check_tool_pattern(pattern)
            if problem is not None:
                raise ValueError(f"tool name pattern {pattern!r}: {problem}")

    def bare(self, name: str, namespace: str | None = None, known: Collection[str] = ()) -> str:
        """The scenario's tool the agent's `name` (in `namespace`) stands for:
        the first pattern that gives a known tool, else the built-in rule."""
        for pattern in self.patterns:
            found = _regex(pattern, self.server).fullmatch(name)
            if found is not None and found.group("tool") in known:
                return found.group("tool")
        return bare_tool_name(name, namespace, known)

    def wire(self, tool: str) -> str:
        """The name the agent would give `tool` by its first pattern (the
        scenario's name when there is no pattern)."""
        if not self.patterns:
            return tool
        return self.patterns[0].replace("{mcp_server}", self.server).replace("{tool}", tool)


BUILT_IN_NAMING = ToolNaming()  # no patterns: the built-in rule alone
