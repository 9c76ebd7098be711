# The child side of a Google ADK app case (`python -m
# faultlab.lab.apps.adkchild`): it imports the user's module, builds its
# Agent (or App) from a scripted model (a `BaseLlm`, ADK's own model
# interface) and the scenario's tools (`BaseTool`s), opens the app's own
# SessionService (`make_session_service(path)`: a `DatabaseSessionService`
# on SQLite, a custom subclass) behind a reporting proxy, and runs each turn
# with `Runner.run_async` on one session id.  Every boundary is reported to
# the lab's gate; the lab SIGKILLs this process at the armed one.  This
# module imports `google.adk` at import time, so only the child loads it.
# The entry points follow the app children's contract (`preload(app)`,
# `main(argv)`), so a fork server can preload once.
from __future__ import annotations

import argparse
import asyncio
import inspect
import sys
import threading
from collections.abc import AsyncGenerator, Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from google.adk.agents import BaseAgent, LlmAgent
from google.adk.apps import App
from google.adk.errors import StaleSessionError
from google.adk.events import Event
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import BaseSessionService, Session
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types
from pydantic import PrivateAttr

from faultlab.lab.apps.adkstate import to_history
from faultlab.lab.apps.appspec import AppSpecError, import_app, refuse_other_framework, run_child
from faultlab.lab.apps.script import (
    ChildCase,
    StoreWrites,
    argument_names,
    call_id,
    child_arguments,
    reading,
    reading_error,
    request_problem,
    run_tool_body,
    scripted_step,
)
from faultlab.lab.servers.gate import GateClient
from faultlab.lab.servers.ledger import LedgerWriter
from faultlab.scenario import Scenario
from faultlab.scenario.model import ToolSpec

__all__ = ["APP_NAME", "MODES", "SESSION_ID", "USER_ID", "ScriptedLlm", "SessionServiceProbe",
           "crashed_invocation", "main", "preload", "resumable"]  # fmt: skip

MODES = ("run",)
APP_NAME = "faultlab"
USER_ID = "faultlab-user"
SESSION_ID = "faultlab-case"


# A scripted answer's token counts (ADK logs a warning for an answer without).
_USAGE = types.GenerateContentResponseUsageMetadata(prompt_token_count=0,
                                                    candidates_token_count=0,
                                                    total_token_count=0)  # fmt: skip


def _contents_json(contents: Sequence[types.Content]) -> list[dict[str, Any]]:
    return [c.model_dump(mode="json", exclude_none=True) for c in contents]


class ModelRejected(Exception):
    """The scripted model refuses a history a model API would reject (400)."""


class ScriptedLlm(BaseLlm):
    """ADK's model interface answered by position in the history it is sent
    (faultlab/lab/apps/script.py), so a fresh process answers as the killed
    one would have.  Call ids are the scripted ones with the child's action
    after them: a resumed child's calls are new calls, as ADK gives every
    call of a real model a fresh id."""

    _scenario: Scenario = PrivateAttr()
    _gate: GateClient = PrivateAttr()
    _suffix: str = PrivateAttr(default="")

    def bind(self, scenario: Scenario, gate: GateClient, action: str) -> ScriptedLlm:
        self._scenario, self._gate = scenario, gate
        self._suffix = "" if action == "run" else f"_{action}"
        return self

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        history = to_history(_contents_json(llm_request.contents))
        problem = request_problem(self._gate, history)
        if problem:
            raise ModelRejected(f"400 {problem}")
        turn, step, spec = scripted_step(self._scenario, history)
        parts: list[types.Part] = []
        text = "Done." if spec is None else spec.text
        if text:
            parts.append(types.Part(text=text))
        calls = []
        for i, c in enumerate(() if spec is None else spec.tool_calls):
            call = call_id(turn, step, i) + self._suffix
            calls.append(call)
            parts.append(types.Part(function_call=types.FunctionCall(
                id=call, name=c.tool, args=dict(c.arguments))))  # fmt: skip
        self._gate.reach("model/answered", calls=calls)
        yield LlmResponse(content=types.Content(role="model", parts=parts), usage_metadata=_USAGE)


class ScriptedTool(BaseTool):
    """A scenario tool: its body reports its boundaries and writes the
    world ledger (script.py `run_tool_body`); a failure is ADK's `error`
    answer, as ADK's own tools return one."""

    def __init__(self, spec: ToolSpec, scenario: Scenario, gate: GateClient,
                 ledger: LedgerWriter) -> None:  # fmt: skip
        super().__init__(name=spec.name, description=f"the scenario's {spec.name} tool")
        self.spec, self.gate, self.ledger = spec, gate, ledger
        self.arguments = argument_names(spec, scenario)

    def _get_declaration(self) -> types.FunctionDeclaration:
        schema = {"type": "object", "properties": {name: {} for name in self.arguments}}
        return types.FunctionDeclaration(name=self.name, description=self.description,
                                         parameters_json_schema=schema)  # fmt: skip

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        # Blocking on the gate blocks the event loop: the process stands
        # still at the boundary while the lab decides, and ADK's parallel
        # calls run their bodies one after the other, in call order.
        failed, text = run_tool_body(self.spec, self.gate, self.ledger,
                                     str(tool_context.function_call_id), dict(args))  # fmt: skip
        return {"error": text} if failed else {"result": text}


def _event_history(event: Event) -> Any:
    return to_history(_contents_json([event.content]) if event.content else [])


class SessionServiceProbe(BaseSessionService):
    """Wraps the app's SessionService: reports each `append_event` started
    and completed as the store's `history/save` and `history/save-done`
    (the boundaries of every app store, so the drive's io-error plans there
    too), with the calls the event asks and answers, and fails the armed
    one with EIO before the app's own write runs."""

    def __init__(self, inner: BaseSessionService, gate: GateClient, fail: str | None) -> None:
        super().__init__()
        self.inner, self.writes = inner, StoreWrites(gate, fail)

    async def create_session(self, **kwargs: Any) -> Session:
        return await self.inner.create_session(**kwargs)

    async def get_session(self, **kwargs: Any) -> Session | None:
        return await self.inner.get_session(**kwargs)

    async def list_sessions(self, **kwargs: Any) -> Any:
        return await self.inner.list_sessions(**kwargs)

    async def delete_session(self, **kwargs: Any) -> None:
        await self.inner.delete_session(**kwargs)

    async def append_event(self, session: Session, event: Event) -> Event:
        if event.partial:  # never stored (BaseSessionService.append_event)
            return await self.inner.append_event(session, event)
        detail = self.writes.before(_event_history(event), 1)
        stored = await self.inner.append_event(session, event)
        self.writes.after(detail)
        return stored

    async def flush(self) -> None:
        await self.inner.flush()


def _module(app: str) -> tuple[ModuleType, Callable[..., Any]]:
    module, factory = import_app(app, "google-adk")
    if not callable(getattr(module, "make_session_service", None)):
        raise AppSpecError(f"{module.__name__} defines no make_session_service(path): a "
                           "google-adk app provides its own SessionService "
                           "(a DatabaseSessionService on SQLite)")  # fmt: skip
    return module, factory


class _Hello(BaseLlm):
    """The warm-up's model: one text answer."""

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="ok")]),
                          usage_metadata=_USAGE)  # fmt: skip


async def _warm_up() -> None:
    """One invocation of a bare agent in memory: ADK imports most of itself
    on the first run (about 560 modules, 1.5 s of every child here), which a
    fork server then does once; and one session stored by ADK's database
    service in an in-memory SQLite (SQLAlchemy configures its mappers and
    pydantic builds the stored models on first use).  Touches no file; the
    database's worker thread ends when it is closed (the server checks that
    it is single-threaded after the preload)."""
    from google.adk.sessions.in_memory_session_service import InMemorySessionService

    service = InMemorySessionService()
    agent = LlmAgent(name="warm_up", model=_Hello(model="hello"))
    runner = Runner(agent=agent, app_name="warm-up", session_service=service)
    await service.create_session(app_name="warm-up", user_id="u", session_id="s")
    message = types.Content(role="user", parts=[types.Part(text="hello")])
    async for _event in runner.run_async(user_id="u", session_id="s", new_message=message):
        pass
    await runner.close()
    try:
        from google.adk.sessions import DatabaseSessionService
    except ImportError:  # no SQLAlchemy: the app's own store, whatever it is
        return
    database = DatabaseSessionService(db_url="sqlite+aiosqlite:///:memory:")
    try:
        session = await database.create_session(app_name="warm-up", user_id="u", session_id="s")
        await database.append_event(session, Event(author="user", invocation_id="warm-up",
                                                   content=message))  # fmt: skip
        await database.get_session(app_name="warm-up", user_id="u", session_id="s")
    finally:
        await database.close()


def preload(app: str) -> None:
    """Import the framework (done by importing this module) and the user's
    module (none when `app` is "": the drive's server of the framework
    alone), then warm ADK up (`_warm_up`); nothing that starts a thread."""
    if app.removeprefix("google-adk:"):
        _module(app.removeprefix("google-adk:"))
    asyncio.run(_warm_up())
    # The database's worker thread ends once its connection is closed, a
    # moment after the close returns: wait for it (bounded), as the server
    # forks only single-threaded.
    for thread in threading.enumerate():
        if thread is not threading.main_thread():
            thread.join(timeout=10.0)


async def _maybe(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


async def _service(module: ModuleType, path: Path) -> BaseSessionService:
    """The app's SessionService at `path`, refused when it keeps nothing
    across a kill (ADK's in-memory one) or is not a SessionService."""
    service = await _maybe(module.make_session_service(path))
    if type(service).__name__ == "InMemorySessionService":
        raise AppSpecError("make_session_service returned an InMemorySessionService, which "
                           "keeps nothing across a kill: return a persistent one, e.g. "
                           "DatabaseSessionService(db_url=f'sqlite+aiosqlite:///{PATH}')")
    if not isinstance(service, BaseSessionService):
        raise AppSpecError(f"make_session_service returned {type(service).__name__}, not an "
                           "ADK BaseSessionService")  # fmt: skip
    return service


async def _close(service: Any) -> None:
    close = getattr(service, "close", None)
    if callable(close):
        await _maybe(close())


async def read_session(module: ModuleType, store: Path, out: Path) -> int:
    """The `read` action: the events the app's own SessionService finds at
    `store` (a copy of the case's store) as the lab's History, written to
    `out`; a service that raises is written as the store's error.  No
    session yet (killed before its creation was stored) is an empty one."""
    try:
        service = await _service(module, store)
        try:
            session = await service.get_session(app_name=_app_name(module), user_id=USER_ID,
                                                session_id=SESSION_ID)  # fmt: skip
        finally:
            await _close(service)
        events = list(session.events) if session is not None else []
        contents = _contents_json([e.content for e in events if e.content])
        answer = reading(len(events), to_history(contents))
    except Exception as error:  # whatever the app's service raises is the verdict's evidence
        answer = reading_error(error)
    out.write_bytes(answer)
    return 0


def _app_name(module: ModuleType) -> str:
    name = getattr(module, "app_name", APP_NAME)
    return name if isinstance(name, str) and name else APP_NAME


def _runner(built: Any, name: str, module: ModuleType, service: BaseSessionService) -> Runner:
    """ADK's Runner over what the factory built, an `App` (its plugins and
    configuration kept) or an agent, under the module's `app_name` (default
    `faultlab`): one name for the run and for a reading of the store."""
    if isinstance(built, App):
        return Runner(app=built, app_name=_app_name(module), session_service=service)
    if isinstance(built, BaseAgent):
        return Runner(agent=built, app_name=_app_name(module), session_service=service)
    refuse_other_framework(built, name, "google-adk")
    raise AppSpecError(f"{name} returned {type(built).__name__}, not an ADK Agent or App")


async def _run(runner: Runner, text: str, gate: GateClient, turn: int, *,
               invocation: str | None = None) -> None:  # fmt: skip
    """One turn: `run_async` with the user's message, or (`invocation`)
    ADK's resumption of that stored invocation, with no new message."""
    message = types.Content(role="user", parts=[types.Part(text=text)])
    events = (runner.run_async(user_id=USER_ID, session_id=SESSION_ID, new_message=message)
              if invocation is None else
              runner.run_async(user_id=USER_ID, session_id=SESSION_ID,
                               invocation_id=invocation))  # fmt: skip
    async for _event in events:
        pass
    gate.reach("invoke/end", turn=turn)


def resumable(runner: Runner) -> bool:
    """Whether ADK resumes this app's invocations: an `App` built with
    `ResumabilityConfig(is_resumable=True)`."""
    config = runner.resumability_config
    return config is not None and config.is_resumable


async def crashed_invocation(service: BaseSessionService, app_name: str, text: str) -> str | None:
    """The invocation the killed process was running, read from the stored
    session's events: the newest event's invocation, when that invocation
    stored the user's message `text` (the turn being resumed); None when
    the turn's invocation never stored its message (there is nothing of it
    to resume: the message is sent again, as every style does then)."""
    session = await service.get_session(app_name=app_name, user_id=USER_ID,
                                        session_id=SESSION_ID)  # fmt: skip
    events = [e for e in session.events if e.invocation_id] if session is not None else []
    if not events:
        return None
    newest = events[-1].invocation_id
    said = ["".join(p.text or "" for p in e.content.parts or ()) for e in events
            if e.invocation_id == newest and e.author == "user" and e.content]  # fmt: skip
    return newest if text in said else None


async def _drive(args: argparse.Namespace) -> int:
    module, factory = _module(args.app)
    if args.action == "read":  # neither the gate nor the ledger: a reading changes nothing
        return await read_session(module, Path(args.db), Path(args.out))
    inner = await _service(module, Path(args.db))
    case = ChildCase.open(args, module)
    scenario, gate, before_resume = case.scenario, case.gate, case.before_resume
    tools = [ScriptedTool(t, scenario, gate, case.ledger) for t in scenario.tools]
    model = ScriptedLlm(model="faultlab-scripted").bind(scenario, gate, args.action)
    name = args.app.rpartition(":")[2]
    try:
        built = factory(model=model, tools=tools)
    except Exception as error:
        raise AppSpecError(f"{name}(model=..., tools=...) raised {type(error).__name__}: "
                           f"{error}") from None  # fmt: skip
    service = SessionServiceProbe(inner, gate, args.fail)
    runner = _runner(built, name, module, service)
    app_name = runner.app_name
    try:
        if await inner.get_session(app_name=app_name, user_id=USER_ID,
                                   session_id=SESSION_ID) is None:  # fmt: skip
            await service.create_session(app_name=app_name, user_id=USER_ID,
                                         session_id=SESSION_ID)  # fmt: skip
        if resumable(runner):
            gate.note("app/resumable")  # the lab plans the `invocation` style only then
        first = args.from_turn
        if args.action != "run":
            # ADK's ways back into a session: run it again on the same id with
            # the user's message (resend; `resume`, the framework's own, which
            # a second writer uses, is the same); hook: the app's repair first;
            # invocation: a resumable app's stored invocation resumed by id.
            text = scenario.turns[first].user
            invocation = None
            if args.action == "invocation":
                if not resumable(runner):
                    raise AppSpecError(f"{name} is not resumable: the invocation resume "
                                       "style needs an App with "
                                       "ResumabilityConfig(is_resumable=True)")  # fmt: skip
                invocation = await crashed_invocation(inner, app_name, text)
            gate.note("app/resume", style=args.action, turn=first, invocation=invocation)
            if args.action == "hook" and before_resume is not None:
                await _maybe(before_resume(inner, app_name=app_name, user_id=USER_ID,
                                           session_id=SESSION_ID))  # fmt: skip
            await _run(runner, text, gate, first, invocation=invocation)
            first += 1
        for turn in range(first, len(scenario.turns)):
            gate.note("app/turn", turn=turn)
            await _run(runner, scenario.turns[turn].user, gate, turn)
    except StaleSessionError as error:
        # ADK refuses a write to a session another process changed since
        # this one loaded it: a second writer is refused, not forked.
        gate.note("app/writer-refused", action=args.action, reason=str(error)[:300])
        raise
    finally:
        await runner.close()
        await _close(inner)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = child_arguments("faultlab.lab.apps.adkchild", argv, modes=MODES,
                           actions=("resume", "resend", "hook", "invocation", "read"),
                           store="the SessionService's SQLite database")  # fmt: skip
    return run_child("google-adk", args.app, lambda: asyncio.run(_drive(args)))


if __name__ == "__main__":
    sys.exit(main())
