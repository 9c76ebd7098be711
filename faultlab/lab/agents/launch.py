# What the black-box drive needs of an agent, whatever describes it (a
# bundled adapter file, a user's own): per case, the commands that run a
# first prompt and a resumed one, with their environment and directory, and
# where the agent keeps its session (copied into the report at the kill).
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from faultlab.lab.agents.adapter import (
    MCP_SERVER_NAME,
    Adapter,
    CaseVars,
    find_adapter,
    render,
    write_files,
)
from faultlab.lab.errors import LabUsageError
from faultlab.lab.read.agentlogs import read_agent_log
from faultlab.lab.read.naming import ToolNaming

__all__ = [
    "AdapterAgent",
    "AgentCommand",
    "AgentLauncher",
    "CaseAgent",
    "CaseWiring",
    "agent_launcher",
]


@dataclass(frozen=True, slots=True)
class AgentCommand:
    """One agent process: argv, its whole environment, its directory."""

    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path | None = None


@dataclass(frozen=True, slots=True)
class CaseWiring:
    """What the lab gives an agent for one case: its private directory, the
    model server's URL, the MCP tool server's command, a session id, and the
    model server's secret as an API key (the URL carries it too)."""

    directory: Path
    model_url: str
    mcp_argv: tuple[str, ...]
    session_id: str
    model_key: str = ""


class CaseAgent(Protocol):
    """An agent prepared for one case (its config files written)."""

    def first(self, prompt: str) -> AgentCommand: ...

    def resume(self, prompt: str) -> AgentCommand: ...

    def session_files(self) -> Sequence[Path]: ...

    def read_session(self, path: Path) -> list[dict[str, Any]] | None:
        """The conversation a session file holds (History.to_json()), or None
        when it cannot be read as one."""
        ...


class AgentLauncher(Protocol):
    """An agent as the drive uses it."""

    @property
    def name(self) -> str: ...

    @property
    def tool_naming(self) -> ToolNaming:
        """How the agent names faultlab's MCP tools on the model wire."""
        ...

    def prepare(self, wiring: CaseWiring) -> CaseAgent: ...


class AdapterAgent:
    """An adapter file as the drive's agent: `prepare` renders its templates
    for one case; each command's environment is the adapter's own over a
    bare PATH and locale (nothing of the lab's environment leaks in)."""

    def __init__(self, adapter: Adapter, *, binary: Path | None = None,
                 install: Path | None = None) -> None:  # fmt: skip
        self.adapter, self._binary, self._install = adapter, binary, install

    @property
    def name(self) -> str:
        return self.adapter.name

    @property
    def tool_naming(self) -> ToolNaming:
        return ToolNaming(self.adapter.tool_name, MCP_SERVER_NAME)

    def prepare(self, wiring: CaseWiring) -> CaseAgent:
        return _PreparedAdapter(self, wiring)


class _PreparedAdapter:
    def __init__(self, agent: AdapterAgent, wiring: CaseWiring) -> None:
        self._agent, self._wiring = agent, wiring
        self._home = wiring.directory / "home"
        self._work = wiring.directory / "work"

    def _command(self, prompt: str, *, resume: bool) -> AgentCommand:
        w = self._wiring
        variables = CaseVars(
            model_url=w.model_url, mcp_command=w.mcp_argv[0], mcp_args=tuple(w.mcp_argv[1:]),
            home=self._home, workdir=self._work, session_id=w.session_id, prompt=prompt,
            model_key=w.model_key or "faultlab",
        )  # fmt: skip
        launch = render(self._agent.adapter, variables, resume=resume,
                        install_dir=self._agent._install, binary=self._agent._binary)  # fmt: skip
        write_files(launch)
        self._glob = launch.session_glob
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
        return AgentCommand(launch.argv, env | dict(launch.env), launch.cwd)

    def first(self, prompt: str) -> AgentCommand:
        return self._command(prompt, resume=False)

    def resume(self, prompt: str) -> AgentCommand:
        return self._command(prompt, resume=True)

    def read_session(self, path: Path) -> list[dict[str, Any]] | None:
        adapter = self._agent.adapter
        reader = adapter.session.reader
        if reader is None or reader == "faultlab-log":
            return None  # no reader, or faultlab's own format (`faultlab inspect` reads it)
        near = Path(adapter.source).parent if adapter.source != "<string>" else None
        try:
            return read_agent_log(reader, path, near=near).history.to_json()
        except (LabUsageError, ValueError):
            return None

    def session_files(self) -> Sequence[Path]:
        pattern = getattr(self, "_glob", "")
        if not pattern:
            return []
        root = Path(pattern).anchor or "/"
        return sorted(Path(root).glob(str(Path(pattern).relative_to(root))))


def agent_launcher(name_or_path: str) -> AdapterAgent:
    """`--agent NAME|FILE`: a bundled adapter by name or a user's file, with
    its installed binary.  Raises LabUsageError (not installed: how to)."""
    from faultlab.lab.agents.install import install_dir, installed

    adapter = find_adapter(name_or_path)
    if adapter.install.kind == "builtin":
        return AdapterAgent(adapter)
    binary = installed(adapter)
    if binary is None:
        raise LabUsageError(f"agent {adapter.name} {adapter.version} is not installed "
                            f"(run: faultlab agents install {adapter.name})")  # fmt: skip
    return AdapterAgent(adapter, binary=binary, install=install_dir(adapter))
