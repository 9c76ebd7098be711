# One run of the black-box agent: open (or create) the session, start the MCP
# servers, repair what a crash left open (made durable before anything else
# happens), run one turn for the prompt, and return its final text.  The
# loop, checkpoints and repair are the reference runtime's own
# (faultlab/runtime/agent.py, checkpoints.py, repair.py via app.commit_repair):
# the `semantic` policy flushes after `request/header` before the model is
# called, after `tool/call` before the MCP server is sent the call, after each
# step, and fails closed.
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import httpx2

from faultlab.runtime.agent import Agent
from faultlab.runtime.app import CompositeApp, commit_repair, persistence_plugin
from faultlab.runtime.backends import JsonlBackend
from faultlab.runtime.checkpoints import policy_plugin
from faultlab.runtime.events import ASSISTANT_MESSAGE, Event
from faultlab.runtime.httpagent.client import AnthropicModel
from faultlab.runtime.httpagent.tools import connect_tools, load_mcp_config
from faultlab.runtime.persistence import PersistenceCoordinator
from faultlab.runtime.session import SessionLog

__all__ = ["DEFAULT_MODEL", "AgentOptions", "TurnOutcome", "final_text", "run_agent"]

DEFAULT_MODEL = "claude-sonnet-4-5"
POLICY = "semantic"
POOL_SIZE = 4  # read-only tools run in parallel, up to this many at once

Say = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class AgentOptions:
    model_url: str
    mcp_config: str
    session_dir: str
    prompt: str
    resume: bool = False
    model: str = DEFAULT_MODEL


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    text: str
    reason: str  # the turn's end reason: "completed" or "cancelled"
    repaired: int  # events crash repair appended before the turn
    log_path: str


def final_text(events: Sequence[Event]) -> str:
    """The text of the last assistant message among `events`."""
    for event in reversed(events):
        if event.type == ASSISTANT_MESSAGE:
            blocks = event.data["message"]["content"]
            return "".join(block["text"] for block in blocks if block["type"] == "text")
    return ""


async def run_agent(options: AgentOptions, *, say: Say) -> TurnOutcome:
    servers = load_mcp_config(options.mcp_config)
    backend = JsonlBackend(options.session_dir)
    # A missing session on --resume, or an existing one without it, is refused
    # here, before any server is started.
    loaded = backend.open(session_id=None, create=not options.resume, resume=options.resume)
    for note in loaded.notes:
        say(f"load: {note}")
    log = SessionLog(loaded.session_id, loaded.events)
    coordinator = PersistenceCoordinator(log, backend)
    app = CompositeApp()
    app.load("persistence", persistence_plugin(coordinator, say))
    try:
        app.load("policy", policy_plugin(POLICY, coordinator))
        async with (
            httpx2.AsyncClient(timeout=httpx2.Timeout(300.0, connect=10.0)) as http,
            connect_tools(servers) as tools,
        ):
            model = AnthropicModel(
                base_url=options.model_url,
                name=options.model,
                tools=tools.definitions(),
                http=http,
                api_key=os.environ.get("ANTHROPIC_API_KEY", "faultlab"),
            )
            agent = Agent(
                log=log,
                coordinator=coordinator,
                host=app.host,
                model=model,
                tools=tools,
                pool_size=POOL_SIZE,
                say=say,
            )
            app.add_agent(agent)
            repaired = await commit_repair(log, coordinator, tools, say)
            first = log.next_seq
            reason = await agent.run_turn(options.prompt, script_turn=0, script_step=0)
            return TurnOutcome(final_text(log.since(first)), reason, repaired, backend.location)
    finally:
        await app.unload()
