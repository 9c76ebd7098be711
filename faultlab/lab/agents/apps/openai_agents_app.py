# The OpenAI Agents SDK app faultlab crash-tests (adapter `openai-agents`):
# the smallest real app on the SDK's own durability story, `SQLiteSession`,
# with the lab's MCP tool server over stdio and the lab's model server as the
# OpenAI endpoint.  Run as a script with the installed SDK on sys.path (the
# adapter sets PYTHONPATH); it is not imported by faultlab itself, so the SDK
# is not one of faultlab's dependencies.
from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any

__all__ = ["main"]


def _options(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="One turn of an Agents SDK app on SQLiteSession.")
    # The model server's URL holds the case's secret: it comes in the
    # environment (OPENAI_BASE_URL, OPENAI_API_KEY), not on the command line
    # every local user can read in /proc (docs/security.md).
    parser.add_argument("--base-url", default=os.environ.get("OPENAI_BASE_URL"),
                        help="the model server, ending in /v1 (default: $OPENAI_BASE_URL)")
    parser.add_argument("--api", choices=("chat", "responses"), default="chat")
    parser.add_argument("--model", default="faultlab-model")
    parser.add_argument("--session-id", required=True)
    parser.add_argument("--db", required=True, help="the SQLiteSession database file")
    parser.add_argument("--mcp-command", required=True)
    parser.add_argument("--mcp-args-json", default="[]", help="the MCP server's argv as JSON")
    parser.add_argument("--prompt", required=True, help="the first prompt or the resume text")
    # Streamed (Runner.run_streamed), as chat apps run it, so the model's
    # stream has boundaries of its own (model/chunk) to be killed at.
    parser.add_argument("--stream", action=argparse.BooleanOptionalAction, default=False,
                        help="run the turn streamed (Runner.run_streamed)")
    opts = parser.parse_args(argv)
    if not opts.base_url:
        parser.error("--base-url or OPENAI_BASE_URL is required")
    return opts


async def _turn(opts: argparse.Namespace) -> str:
    # The SDK is imported here, not at the top, so `--help` works without it.
    from agents import (  # type: ignore[import-not-found, unused-ignore]
        Agent,
        OpenAIChatCompletionsModel,
        OpenAIResponsesModel,
        Runner,
        SQLiteSession,
        set_tracing_disabled,
    )
    from agents.mcp import MCPServerStdio  # type: ignore[import-not-found, unused-ignore]
    from openai import AsyncOpenAI  # type: ignore[import-not-found, unused-ignore]

    set_tracing_disabled(True)  # tracing would post to the vendor's host
    # No retries: a cut stream or a parked request must reach the app as is.
    client = AsyncOpenAI(base_url=opts.base_url, api_key=os.environ.get("OPENAI_API_KEY", "dummy"),
                         max_retries=0)  # fmt: skip
    model: Any = (OpenAIChatCompletionsModel(model=opts.model, openai_client=client)
                  if opts.api == "chat"
                  else OpenAIResponsesModel(model=opts.model, openai_client=client))  # fmt: skip
    args = json.loads(opts.mcp_args_json)
    async with MCPServerStdio(name="faultlab", params={"command": opts.mcp_command, "args": args},
                              client_session_timeout_seconds=30) as server:  # fmt: skip
        agent = Agent(name="faultlab-app", instructions="Use the tools to do what is asked.",
                      model=model, mcp_servers=[server])  # fmt: skip
        # The same session id and file on resume: the SDK reloads the history.
        session = SQLiteSession(opts.session_id, opts.db)
        if not opts.stream:
            done = await Runner.run(agent, opts.prompt, session=session)
            return str(done.final_output)
        streamed = Runner.run_streamed(agent, opts.prompt, session=session)
        async for _event in streamed.stream_events():
            pass  # the session is written by the SDK as the run goes
        return str(streamed.final_output)


def main(argv: list[str] | None = None) -> int:
    opts = _options(sys.argv[1:] if argv is None else argv)
    print(asyncio.run(_turn(opts)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
