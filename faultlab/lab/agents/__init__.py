# The agents room: how a real agent is described (adapter files), installed
# (pinned versions in a cache directory) and launched for one case.  Sits above
# servers (it configures agents to call them) and below the oracle's users.
from __future__ import annotations

from faultlab.lab.agents.adapter import (
    Adapter,
    CaseVars,
    Launch,
    bundled_adapters,
    find_adapter,
    load_adapter,
    parse_adapter,
    render,
    write_files,
)
from faultlab.lab.agents.install import AgentRow, agents_dir, install, installed, list_agents

__all__ = [
    "Adapter",
    "AgentRow",
    "CaseVars",
    "Launch",
    "agents_dir",
    "bundled_adapters",
    "find_adapter",
    "install",
    "installed",
    "list_agents",
    "load_adapter",
    "parse_adapter",
    "render",
    "write_files",
]
