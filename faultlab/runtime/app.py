# Composition of a runnable session: the persistence backend and coordinator,
# the checkpoint policy, the agent and its scripted model and tools, loaded as
# parts of one composite app.  Unloading goes in reverse: edge parts (bridges
# that bring work in) first, then the agents are let quiesce and persist their
# real closing events, then the policy, then persistence.  Resume repairs the
# log before the agent continues with the next scripted step or turn.
from __future__ import annotations

import asyncio
import errno
import os
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from faultlab.probe import PROBE
from faultlab.runtime.agent import Agent
from faultlab.runtime.backends import Backend, open_backend
from faultlab.runtime.checkpoints import policy_plugin
from faultlab.runtime.host import Disposer, Host, Plugin
from faultlab.runtime.ledger import WorldLedger
from faultlab.runtime.model import ScriptedModel
from faultlab.runtime.persistence import FlushError, PersistenceCoordinator
from faultlab.runtime.repair import plan_repair
from faultlab.runtime.resume import next_cursor
from faultlab.runtime.session import SessionLog
from faultlab.runtime.tools import ScriptedTools, Tools
from faultlab.scenario import Scenario

__all__ = [
    "LEDGER_NAME",
    "CompositeApp",
    "RunOutcome",
    "SessionRunner",
    "commit_repair",
    "persistence_plugin",
]

LEDGER_NAME = "world-ledger.jsonl"

Say = Callable[[str], None]


def _inject_failure(backend: Backend, reply: dict[str, Any]) -> None:
    """The lab's io-error fault: the next write (or fsync) of the log fails."""
    code = getattr(errno, str(reply.get("errno", "EIO")), errno.EIO)
    op = str(reply.get("op", "write"))
    backend.arm_failure(op if op in ("write", "sync") else "write", code)


class CompositeApp:
    """Parts loaded in order and unloaded in reverse, agents quiesced first."""

    def __init__(self, host: Host | None = None) -> None:
        self.host = host or Host()
        self._core: list[tuple[str, Disposer]] = []
        self._edge: list[tuple[str, Disposer]] = []
        self._tasks: set[asyncio.Task[Any]] = set()
        self._agents: list[Agent] = []
        self.unloaded: list[str] = []

    def load(self, name: str, plugin: Plugin, *, edge: bool = False) -> None:
        (self._edge if edge else self._core).append((name, self.host.load(plugin)))

    def add_agent(self, agent: Agent) -> None:
        self._agents.append(agent)

    def spawn(self, work: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def quiesce(self) -> None:
        """Cancel the agents' turns and wait until their work has ended."""
        for agent in self._agents:
            agent.cancel.cancel("app unloading")
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def unload(self) -> None:
        for name, dispose in reversed(self._edge):
            dispose()
            self.unloaded.append(name)
        self._edge.clear()
        await self.quiesce()
        for name, dispose in reversed(self._core):
            dispose()
            self.unloaded.append(name)
        self._core.clear()


def persistence_plugin(coordinator: PersistenceCoordinator, say: Say) -> Plugin:
    """Owns the backend's lifetime: its disposer flushes what is left and closes."""

    def install(host: Host) -> Disposer:
        def dispose() -> None:
            try:
                coordinator.flush_now()
            except FlushError as exc:
                say(f"final flush failed, {coordinator.pending} event(s) not durable: {exc}")
            finally:
                coordinator.backend.close()

        return dispose

    return install


async def commit_repair(
    log: SessionLog, coordinator: PersistenceCoordinator, tools: Tools, say: Say
) -> int:
    """Plan crash repair for `log`, append it and make it durable; return the
    number of events appended (0 when the last turn is closed)."""

    def safe_to_retry(name: str) -> bool | None:
        spec = tools.spec(name)
        return None if spec is None else spec.safe_to_retry

    actions = plan_repair(log.events, safe_to_retry)
    if not actions:
        return 0
    first = log.next_seq
    for action in actions:
        log.append(action.type, action.data)
    if PROBE.enabled:
        PROBE.reach("repair/logged", first=first, count=len(actions))
    await coordinator.flush()
    if PROBE.enabled:
        PROBE.reach("repair/durable", first=first, count=len(actions))
    codes = [a.data["error"]["code"] for a in actions if "error" in a.data]
    say(f"repair: appended {len(actions)} event(s) from seq {first}: {codes or 'no calls'}")
    return len(actions)


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """How a run of the child ended."""

    reason: str  # "completed", "cancelled" or "repaired" (--repair-only)
    turns: int
    repaired: int
    log_path: str


class SessionRunner:
    """Runs (or resumes) one scenario in one session directory."""

    def __init__(
        self,
        scenario: Scenario,
        session_dir: str | os.PathLike[str],
        *,
        resume: bool = False,
        ledger_path: str | os.PathLike[str] | None = None,
        policy: str | None = None,
        backend: str | None = None,
        session_id: str | None = None,
        repair_only: bool = False,
        say: Say | None = None,
    ) -> None:
        self.scenario = scenario
        self.session_dir = Path(session_dir)
        self.resume = resume
        self.ledger_path = Path(ledger_path) if ledger_path else self.session_dir / LEDGER_NAME
        self.policy = policy or scenario.policy
        self.backend = backend or scenario.backend
        self.session_id = session_id
        self.repair_only = repair_only
        self.say: Say = say or (lambda _text: None)
        self.app = CompositeApp()
        self.agent: Agent | None = None
        self._stop_reason: str | None = None

    def request_stop(self, reason: str = "stop requested") -> None:
        """Graceful stop: cancel the running turn; its closing events are persisted."""
        self._stop_reason = reason
        if self.agent is not None:
            self.agent.cancel.cancel(reason)

    async def run(self) -> RunOutcome:
        backend = open_backend(self.backend, self.session_dir)
        create = not self.repair_only  # repairing a session that does not exist is an error
        loaded = backend.open(session_id=self.session_id, create=create, resume=self.resume)
        for note in loaded.notes:
            self.say(f"load: {note}")
        log = SessionLog(loaded.session_id, loaded.events)
        coordinator = PersistenceCoordinator(log, backend)
        if PROBE.enabled:
            PROBE.on("fail-next-flush", lambda reply: _inject_failure(backend, reply))
        self.app.load("persistence", persistence_plugin(coordinator, self.say))
        ledger = WorldLedger(self.ledger_path)
        try:
            self.app.load("policy", policy_plugin(self.policy, coordinator))
            tools = ScriptedTools(self.scenario, ledger)
            agent = Agent(
                log=log,
                coordinator=coordinator,
                host=self.app.host,
                model=ScriptedModel(self.scenario),
                tools=tools,
                pool_size=self.scenario.max_parallel_tools,
                say=self.say,
            )
            self.agent = agent
            self.app.add_agent(agent)
            if self._stop_reason is not None:
                agent.cancel.cancel(self._stop_reason)
            repaired = await self._repair(log, coordinator, tools)
            if self.repair_only:
                return RunOutcome("repaired", 0, repaired, backend.location)
            outcome: RunOutcome = await self.app.spawn(
                self._drive(agent, repaired, backend.location)
            )
            return outcome
        finally:
            await self.app.unload()
            ledger.close()

    async def _repair(
        self, log: SessionLog, coordinator: PersistenceCoordinator, tools: ScriptedTools
    ) -> int:
        return await commit_repair(log, coordinator, tools, self.say)

    async def _drive(self, agent: Agent, repaired: int, log_path: str) -> RunOutcome:
        turns = 0
        while not agent.cancel.is_cancelled():
            cursor = next_cursor(agent.log.events, self.scenario)
            if cursor is None:
                return RunOutcome("completed", turns, repaired, log_path)
            reason = await agent.run_turn(
                cursor.user_text, script_turn=cursor.script_turn, script_step=cursor.script_step
            )
            turns += 1
            if reason == "cancelled":
                break
        return RunOutcome("cancelled", turns, repaired, log_path)
