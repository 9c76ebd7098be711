# One ACP session of the reference runtime, composed in order as one
# CompositeApp: persistence, then the checkpoint policy, then the client
# updates (core parts), and the ACP bridge as the edge part that brings work
# in.  Unloading goes in reverse: the bridge first (no new prompt is taken,
# the running turn is cancelled), then the agents quiesce and persist their
# real step/end and turn/end, then the client updates, the policy and
# persistence go.  Each prompt runs one turn of the scenario's script with a
# fresh cancel token, at the position `next_cursor` reads from the log.
from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from faultlab.runtime.acp.updates import Update, live_updates, replay_updates
from faultlab.runtime.agent import Agent
from faultlab.runtime.app import LEDGER_NAME, CompositeApp, commit_repair, persistence_plugin
from faultlab.runtime.backends import open_backend
from faultlab.runtime.checkpoints import policy_plugin
from faultlab.runtime.events import Event
from faultlab.runtime.host import SESSION_APPENDED, Disposer, Host, Plugin
from faultlab.runtime.ledger import WorldLedger
from faultlab.runtime.model import ScriptedModel
from faultlab.runtime.persistence import PersistenceCoordinator
from faultlab.runtime.resume import next_cursor
from faultlab.runtime.session import SessionLog
from faultlab.runtime.tools import ScriptedTools
from faultlab.scenario import Scenario

__all__ = ["AcpSession", "ScriptFinished", "SessionBusy", "SessionClosed"]

Say = Callable[[str], None]
Send = Callable[[Update], None]


class SessionBusy(Exception):
    """A prompt arrived while another turn of the session is running."""


class SessionClosed(Exception):
    """The session's bridge is unloaded (shutting down) or it failed closed."""


class ScriptFinished(Exception):
    """The scenario's script has no further turn to run."""


class AcpSession:
    """A session log, its composition and its running turn."""

    def __init__(
        self, scenario: Scenario, directory: Path, *, session_id: str, policy: str | None,
        send: Send, say: Say,
    ) -> None:  # fmt: skip
        self.scenario = scenario
        self.directory = directory
        self.session_id = session_id
        self.policy = policy or scenario.policy
        self._send = send
        self._say = say
        self.app = CompositeApp()
        self.accepting = False
        self.failed: str | None = None
        self.agent: Agent | None = None
        self.log: SessionLog | None = None
        self._coordinator: PersistenceCoordinator | None = None
        self._tools: ScriptedTools | None = None
        self._ledger: WorldLedger | None = None

    # -- composition -------------------------------------------------------

    async def open(self, *, resume: bool) -> int:
        """Create (or load, repair and make durable) the session; return how
        many events crash repair appended."""
        backend = open_backend(self.scenario.backend, str(self.directory))
        loaded = backend.open(session_id=self.session_id, create=not resume, resume=resume)
        for note in loaded.notes:
            self._say(f"load: {note}")
        log = SessionLog(loaded.session_id, loaded.events)
        coordinator = PersistenceCoordinator(log, backend)
        self.log, self._coordinator = log, coordinator
        self.app.load("persistence", persistence_plugin(coordinator, self._say))
        self._ledger = WorldLedger(self.directory / LEDGER_NAME)
        self._tools = ScriptedTools(self.scenario, self._ledger)
        self.app.load("policy", policy_plugin(self.policy, coordinator))
        self.app.load("client-updates", self._updates_plugin())
        self.app.load("acp-bridge", self._bridge_plugin(), edge=True)
        return await commit_repair(log, coordinator, self._tools, self._say) if resume else 0

    def _read_only(self, name: str) -> bool:
        spec = self._tools.spec(name) if self._tools else None
        return bool(spec and spec.read_only)

    def _updates_plugin(self) -> Plugin:
        async def show(event: Event) -> None:
            for update in live_updates(event, self._read_only):
                self._send(update)  # queued: a slow client never stalls the turn

        def install(host: Host) -> Disposer:
            return host.on(SESSION_APPENDED, show)

        return install

    def _bridge_plugin(self) -> Plugin:
        def install(_host: Host) -> Disposer:
            self.accepting = True

            def dispose() -> None:
                self.accepting = False
                self.cancel("agent shutting down")

            return dispose

        return install

    async def close(self) -> None:
        """Unload in order (bridge, quiesce, updates, policy, persistence)."""
        try:
            await self.app.unload()
        finally:
            if self._ledger is not None:
                self._ledger.close()

    # -- the conversation --------------------------------------------------

    @property
    def busy(self) -> bool:
        return self.agent is not None

    def next_prompt(self) -> str | None:
        """The user message of the script's next turn (None: the script is done)."""
        assert self.log is not None
        cursor = next_cursor(self.log.events, self.scenario)
        return None if cursor is None else cursor.user_text

    def replay(self) -> list[Update]:
        assert self.log is not None
        return replay_updates(self.log.events, self._read_only)

    async def prompt(self, text: str) -> str:
        """Run one turn for the user's `text`; return its end reason
        ("completed" or "cancelled").  Raises FlushError if it failed closed."""
        if not self.accepting or self.failed:
            raise SessionClosed(self.failed or "the agent is shutting down")
        if self.busy:
            raise SessionBusy("a prompt of this session is still running")
        assert self.log is not None and self._coordinator and self._tools
        cursor = next_cursor(self.log.events, self.scenario)
        if cursor is None:
            raise ScriptFinished(f"the script of {self.scenario.name} has no further turn")
        agent = Agent(
            log=self.log, coordinator=self._coordinator, host=self.app.host,
            model=ScriptedModel(self.scenario), tools=self._tools,
            pool_size=self.scenario.max_parallel_tools, say=self._say,
        )  # fmt: skip
        self.agent = agent
        self.app.add_agent(agent)
        task = self.app.spawn(
            agent.run_turn(text, script_turn=cursor.script_turn, script_step=cursor.script_step)
        )
        try:
            # shield: the client going away must not tear the turn down half way;
            # it ends through its cancel token and persists its closing events.
            reason: str = await asyncio.shield(task)
        except Exception as exc:
            self.failed = f"the session stopped fail-closed: {exc}"
            raise
        finally:
            self.agent = None
        return reason

    def cancel(self, reason: str = "session/cancel") -> bool:
        """Cancel the running turn (cooperatively); False if none is running."""
        if self.agent is None:
            return False
        self.agent.cancel.cancel(reason)
        return True

    def describe(self) -> dict[str, Any]:
        return {"sessionId": self.session_id, "nextPrompt": self.next_prompt()}
