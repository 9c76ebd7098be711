# How a black-box agent is crash-tested: the agent unmodified, pointed at
# faultlab's model and tool servers, killed at what those servers observe.
from __future__ import annotations

from faultlab.lab.agents.launch import AgentCommand, AgentLauncher, CaseAgent, CaseWiring

__all__ = ["AgentCommand", "AgentLauncher", "CaseAgent", "CaseWiring"]
