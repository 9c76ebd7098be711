# The ACP methods of the reference runtime: initialize (advertising
# session/load), session/new, session/load (repair, then replay the whole
# repaired conversation as session/update notifications), session/prompt (one
# scripted turn), session/cancel (cancel the running turn; it persists its real
# closing events).  Notifications go out through one queue in order; a prompt
# or load answers only once its updates are sent.  `shutdown` closes every
# session in order (see session.py).
from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptResponse,
    StopReason,
)

from faultlab.probe import PROBE
from faultlab.runtime.acp import META_KEY
from faultlab.runtime.acp.session import AcpSession, ScriptFinished, SessionBusy, SessionClosed
from faultlab.runtime.acp.updates import Update
from faultlab.runtime.backends import SessionStoreError
from faultlab.runtime.persistence import FlushError
from faultlab.scenario import Scenario

__all__ = ["AGENT_NAME", "ReferenceAcpAgent"]

AGENT_NAME = "faultlab-reference"
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_STOP: dict[str, StopReason] = {"completed": "end_turn", "cancelled": "cancelled"}

Say = Callable[[str], None]


class ReferenceAcpAgent:
    """Serves a scenario's scripted sessions to one ACP client."""

    def __init__(
        self, scenario: Scenario, sessions_dir: Path, *, policy: str | None = None,
        say: Say | None = None,
    ) -> None:  # fmt: skip
        self.scenario = scenario
        self.sessions_dir = sessions_dir
        self.policy = policy
        self._say: Say = say or (lambda _text: None)
        self._client: Client | None = None
        self._sessions: dict[str, AcpSession] = {}
        self._outbox: asyncio.Queue[tuple[str, Update] | None] = asyncio.Queue()
        self._sender: asyncio.Task[None] | None = None
        self._in_flight = 0
        self._shutting_down = False

    # -- plumbing ----------------------------------------------------------

    def on_connect(self, conn: Client) -> None:
        self._client = conn

    def _sender_for(self, session_id: str) -> Callable[[Update], None]:
        def send(update: Update) -> None:
            if self._sender is None:
                self._sender = asyncio.get_running_loop().create_task(self._send_loop())
            self._outbox.put_nowait((session_id, update))

        return send

    async def _send_loop(self) -> None:
        while (item := await self._outbox.get()) is not None:
            try:
                if self._client is not None:
                    await self._client.session_update(session_id=item[0], update=item[1])
            except Exception as exc:  # the client went away: the turn goes on, unseen
                self._say(f"acp: session/update not delivered: {exc}")
            finally:
                self._outbox.task_done()
        self._outbox.task_done()

    async def _flush_updates(self) -> None:
        await self._outbox.join()

    def _session(self, session_id: str) -> AcpSession:
        session = self._sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params(
                {"sessionId": session_id, "details": "no such session in this agent"}
            )
        return session

    def _meta(self, session: AcpSession) -> dict[str, Any]:
        return {META_KEY: session.describe()}

    def _refuse_if_stopping(self) -> None:
        if self._shutting_down:
            raise RequestError.internal_error({"details": "the agent is shutting down"})

    # -- ACP methods -------------------------------------------------------

    async def initialize(
        self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None,
        **_kwargs: Any,
    ) -> InitializeResponse:  # fmt: skip
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(load_session=True),
            agent_info=Implementation(name=AGENT_NAME, title=self.scenario.name, version="1"),
        )

    async def new_session(
        self, cwd: str, mcp_servers: Any = None, **_kwargs: Any
    ) -> NewSessionResponse:
        self._refuse_if_stopping()
        session_id = uuid.uuid4().hex
        session = self._make(session_id)
        try:
            await session.open(resume=False)
        except SessionStoreError as exc:
            await session.close()
            raise RequestError.internal_error({"details": str(exc)}) from None
        self._sessions[session_id] = session
        self._say(f"session/new {session_id} (cwd {cwd})")
        return NewSessionResponse(session_id=session_id, field_meta=self._meta(session))

    def _make(self, session_id: str) -> AcpSession:
        return AcpSession(
            self.scenario, self.sessions_dir / session_id, session_id=session_id,
            policy=self.policy, send=self._sender_for(session_id), say=self._say,
        )  # fmt: skip

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: Any = None, **_kwargs: Any
    ) -> LoadSessionResponse:
        self._refuse_if_stopping()
        if not _SESSION_ID.fullmatch(session_id):
            raise RequestError.invalid_params({"sessionId": session_id, "details": "bad id"})
        previous = self._sessions.pop(session_id, None)
        if previous is not None:
            if previous.busy:
                self._sessions[session_id] = previous
                raise RequestError.invalid_request(
                    {"sessionId": session_id, "details": "a prompt of this session is running"}
                )
            await previous.close()  # reloaded from its durable state, like a new process
        if not (self.sessions_dir / session_id).is_dir():
            raise RequestError.resource_not_found(str(self.sessions_dir / session_id))
        session = self._make(session_id)
        try:
            repaired = await session.open(resume=True)
        except (SessionStoreError, FlushError) as exc:
            await session.close()
            raise RequestError.internal_error(
                {"sessionId": session_id, "details": str(exc)}
            ) from None
        self._sessions[session_id] = session
        send = self._sender_for(session_id)
        for update in session.replay():
            send(update)
        await self._flush_updates()
        self._say(f"session/load {session_id}: {repaired} repair event(s), history replayed")
        return LoadSessionResponse(field_meta=self._meta(session))

    async def prompt(self, prompt: list[Any], session_id: str, **_kwargs: Any) -> PromptResponse:
        self._refuse_if_stopping()
        session = self._session(session_id)
        text = "".join(getattr(block, "text", "") for block in prompt)
        self._in_flight += 1
        try:
            reason = await session.prompt(text)
        except (SessionBusy, ScriptFinished) as exc:
            raise RequestError.invalid_request({"details": str(exc)}) from None
        except SessionClosed as exc:
            raise RequestError.internal_error({"details": str(exc)}) from None
        except FlushError as exc:
            await self._flush_updates()
            raise RequestError.internal_error(
                {"details": f"stopped fail-closed: {exc}", "sessionId": session_id}
            ) from None
        else:
            await self._flush_updates()
            return PromptResponse(stop_reason=_STOP[reason], field_meta=self._meta(session))
        finally:
            self._in_flight -= 1

    async def cancel(self, session_id: str, **_kwargs: Any) -> None:
        session = self._sessions.get(session_id)
        if PROBE.enabled:
            PROBE.fact("session/cancel", sessionId=session_id)
        if session is not None and session.cancel("session/cancel"):
            self._say(f"session/cancel {session_id}: running turn cancelled")

    # -- shutdown ----------------------------------------------------------

    async def shutdown(self) -> None:
        """Close every session in order; running prompts are answered first."""
        self._shutting_down = True
        for session in list(self._sessions.values()):
            await session.close()
        self._sessions.clear()
        while self._in_flight:  # each prompt answers once its turn has closed
            await asyncio.sleep(0.001)
        await self._flush_updates()
        if self._sender is not None:
            self._outbox.put_nowait(None)
            await self._sender
