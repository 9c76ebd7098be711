# One case's servers, for the drives that run a target against faultlab's
# own (the black-box agents, faultlab/lab/blackbox/drive.py; the framework
# apps, faultlab/lab/apps/drive.py): the case's directory, emptied; the
# world ledger the tools write; the gate, armed at the case's kill point,
# and its Unix socket for the out-of-process reporters (the MCP tool server,
# an app child); the relays through which an agent's MCP tool servers are
# forked (toolrelay.py); the scripted model server when the target needs one; the
# files of each child run beside them; and, when the case closes, the gate's
# records written to `records.jsonl`.
from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Protocol, Self

import orjson

from faultlab.lab.process.forkserver import ForkServerError
from faultlab.lab.process.scratch import owned_dir
from faultlab.lab.read.naming import BUILT_IN_NAMING, ToolNaming
from faultlab.lab.servers.gate import Gate, GateBridge
from faultlab.lab.servers.model import FOREIGN_REQUEST, TOOL_NOT_OFFERED, ModelServer
from faultlab.lab.servers.points import KillPoint
from faultlab.lab.servers.records import GateRecord
from faultlab.lab.servers.toolrelay import SHIM, ToolRelay, relay_wanted, tool_fork_server
from faultlab.scenario import Scenario
from faultlab.userfiles import read_tail

__all__ = ["POLL", "Ending", "RigProcess", "ServerRig", "tool_note"]

POLL = 0.005  # seconds between looks at a child and at the gate
_TOOL_SERVER = "faultlab.lab.servers.mcptools"
Ending = Literal["exited", "fired", "late"]


def tool_note(records: Iterable[GateRecord]) -> str:
    """What a run's records say of answers that called a tool their request
    did not offer (the agent had not registered it yet, or names it otherwise
    than the adapter's `tool_name` says); '' if none."""
    notes = [r for r in records if r.get("fact") == TOOL_NOT_OFFERED]
    if not notes:
        return ""
    first = notes[0]
    offered = ", ".join(str(t) for t in first.get("offered") or ()) or "no tools at all"
    return (f"the scripted model called {', '.join(str(t) for t in first.get('tools') or ())}"
            f", which model request {first.get('request')} did not offer (it offered: "
            f"{offered[:300]}); {len(notes)} such answer(s): if the agent names faultlab's MCP "
            "tools another way, say how with `tool_name` in its adapter (docs/agents.md; "
            f"{TOOL_NOT_OFFERED} in records.jsonl)")  # fmt: skip


class RigProcess(Protocol):
    """What the rig needs of a child it watches (an exec'd ContainedProcess
    or a forked app)."""

    def wait(self, timeout: float) -> int | None: ...

    def kill_tree(self, timeout: float = ...) -> int | None: ...


class ServerRig:
    """The servers, the gate, the ledger and the files of one case in `where`.

    `with ServerRig(...) as rig:` (or `close()`) releases the gate, stops
    the servers and writes the gate's records to `rig.records`."""

    def __init__(self, where: Path, armed: KillPoint | None, *, timeout: float,
                 model: Scenario | None = None,
                 naming: ToolNaming = BUILT_IN_NAMING) -> None:  # fmt: skip
        """`timeout`: what a child run may take (`watch`); `model`: serve
        this scenario's scripted model too, to an agent that names the MCP
        tools as `naming` says."""
        shutil.rmtree(where, ignore_errors=True)
        where.mkdir(parents=True)
        self.where, self.timeout = where, timeout
        self.ledger = where / "world.jsonl"
        self.records = where / "records.jsonl"
        self.gate = Gate(armed)
        # A Unix socket path must fit in 108 bytes: a short folder of its own
        # in the system temp dir, that names its owner (the next run removes
        # it if this one is SIGKILLed) and only this user may enter.
        self._socket_dir = owned_dir("faultlab-gate-")
        self.bridge = GateBridge(self.gate, self._socket_dir / "gate")
        self.model: ModelServer | None = None
        self.model_url = ""  # where the model server listens, when it runs (its secret in it)
        self.model_key = ""  # the same secret, for an agent that sends it as its API key
        self.forward: dict[int, str] = {}
        self.relays: list[ToolRelay] = []  # where forked tool servers are asked for
        if model is not None:
            # A target may get a network namespace of its own: its supervisor
            # then relays 127.0.0.1:port inside to this socket (`forward`),
            # and nothing else is reachable.
            model_socket = str(self._socket_dir / "model")
            self.model = ModelServer(model, self.gate, unix_path=model_socket, naming=naming)
            self.model.start()
            self.model_url, self.model_key = self.model.url, self.model.key
            self.forward = {self.model.port: model_socket}

    def tool_server(self, scenario_path: str) -> tuple[str, ...]:
        """The command of faultlab's MCP tool server for this case: the
        scenario's tools, writing to the case's ledger, reporting to its gate.
        `-I`: neither the agent's working directory (where the agent starts
        it, and writes what it likes) nor the PYTHONPATH the agent runs with
        (a Python agent's own packages, its own `mcp` among them) is on its
        path, so nothing of the agent's shadows the MCP SDK (docs/security.md).
        The lab's own PYTHONPATH (faultlab run from a checkout) is put back
        explicitly, ahead of the rest, as the lab itself imports."""
        args = (scenario_path, "--ledger", str(self.ledger), "--gate", str(self.bridge.path))
        own = [entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
        if not own:
            command: tuple[str, ...] = (sys.executable, "-I", "-m", _TOOL_SERVER, *args)
        else:
            boot = (f"import runpy, sys; sys.path[:0] = {own!r}; "
                    f"runpy.run_module({_TOOL_SERVER!r}, run_name='__main__', alter_sys=True)")
            command = (sys.executable, "-I", "-c", boot, *args)
        relay = self._relay(args)
        if relay is None:
            return command
        # A bare interpreter that hands the agent's pipes to a tool server
        # forked with the SDK imported (toolrelay.py); `command` if it cannot.
        return (sys.executable, "-I", "-S", SHIM, str(relay.path), "--", *command)

    def _relay(self, args: tuple[str, ...]) -> ToolRelay | None:
        if not relay_wanted():
            return None
        try:
            server = tool_fork_server()
        except (ForkServerError, OSError):
            return None  # the agent execs the server, as it would anyway
        relay = ToolRelay(self._socket_dir / f"tools{len(self.relays)}", args, server)
        self.relays.append(relay)
        return relay

    def kill_orphaned_tools(self) -> None:
        """Kill every forked tool server whose shim is gone (the agent's tree
        was killed), before the gate lets a held call go on."""
        for relay in self.relays:
            relay.kill_orphans()

    def outputs(self, name: str) -> tuple[Path, Path]:
        """Where child run `name` writes its stdout and its stderr."""
        return self.where / f"{name}.stdout", self.where / f"{name}.stderr"

    def watch(self, process: RigProcess, deadline: float, *,
              armed: bool) -> tuple[Ending, int | None]:  # fmt: skip
        """Wait for `process`: ("exited", its status); ("fired", None) when
        `armed` and the gate fired first (the drive then does its fault);
        ("late", its status after its tree was killed) when it neither exited
        nor fired by `deadline`."""
        while True:
            status = process.wait(POLL)
            if status is not None:
                return "exited", status
            if armed and self.gate.fired.is_set():
                return "fired", None
            if time.monotonic() > deadline:
                process.kill_tree()
                return "late", process.wait(self.timeout)

    def foreign_note(self) -> str:
        """What a case's result says of requests its agent did not send
        (refused by the model server, never ground truth); '' if none."""
        count = sum(1 for r in self.gate.snapshot() if r.get("fact") == FOREIGN_REQUEST)
        if not count:
            return ""
        return (f"{count} request(s) without the case's secret reached the model server: "
                f"refused, not counted ({FOREIGN_REQUEST} in {self.records.name})")  # fmt: skip

    def tool_note(self) -> str:
        """What a case's result says of answers that called a tool their
        request did not offer; '' if none (`tool_note`)."""
        return tool_note(self.gate.snapshot())

    def write_json(self, name: str, value: Any) -> Path:
        """`value` as indented JSON in the case's file `name`."""
        path = self.where / name
        path.write_bytes(orjson.dumps(value, option=orjson.OPT_INDENT_2))
        return path

    def tail(self, name: str, limit: int = 4000) -> str:
        """The last `limit` bytes of the case's file `name` ('' if none),
        however large the child made it (faultlab.userfiles.read_tail)."""
        return read_tail(self.where / name, limit=limit).decode("utf-8", "replace")

    def close(self) -> None:
        """Release the gate (held servers stop), stop the servers, remove the
        sockets, and write the gate's records."""
        for relay in self.relays:
            relay.close()
        self.gate.release()
        if self.model is not None:
            self.model.stop()
        self.bridge.close()
        shutil.rmtree(self._socket_dir, ignore_errors=True)
        option = orjson.OPT_APPEND_NEWLINE | orjson.OPT_SORT_KEYS
        records = self.gate.snapshot()
        self.records.parent.mkdir(parents=True, exist_ok=True)
        self.records.write_bytes(b"".join(orjson.dumps(r, option=option) for r in records))

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:  # fmt: skip
        self.close()
