# The Claude Agent SDK app faultlab crash-tests (adapter `claude-agent-sdk`):
# the way teams embed Claude Code in their own Python apps, `query()` with
# the lab's MCP tool server over stdio, the lab's model server as the
# Anthropic endpoint (ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY in the
# environment, inherited by the CLI the SDK starts), and the SDK's own way
# back into a session: `session_id` on the first turn, `resume` after.  The
# session is Claude Code's JSONL, written by the CLI the SDK bundles.  Run as
# a script with the installed SDK on sys.path (the adapter sets PYTHONPATH);
# faultlab never imports it, so the SDK is not one of faultlab's dependencies.
from __future__ import annotations

import argparse
import asyncio
import json
import sys

__all__ = ["main"]


def _options(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="One turn of a Claude Agent SDK app.")
    parser.add_argument("--session-id", required=True, help="the session (a UUID)")
    parser.add_argument("--resume", action="store_true", help="resume the session (not start it)")
    parser.add_argument("--mcp-command", required=True)
    parser.add_argument("--mcp-args-json", default="[]", help="the MCP server's argv as JSON")
    parser.add_argument("--prompt", required=True, help="the first prompt or the resume text")
    return parser.parse_args(argv)


async def _turn(opts: argparse.Namespace) -> int:
    # The SDK is imported here, not at the top, so `--help` works without it.
    from claude_agent_sdk import (  # type: ignore[import-not-found, unused-ignore]
        ClaudeAgentOptions,
        ResultMessage,
        query,
    )

    server = {"type": "stdio", "command": opts.mcp_command, "args": json.loads(opts.mcp_args_json)}
    options = ClaudeAgentOptions(
        mcp_servers={"faultlab": server}, strict_mcp_config=True,
        allowed_tools=["mcp__faultlab"],  # every tool of faultlab's server, nothing else
        session_id=None if opts.resume else opts.session_id,
        resume=opts.session_id if opts.resume else None,
    )  # fmt: skip
    failed = False
    async for message in query(prompt=opts.prompt, options=options):
        print(type(message).__name__, flush=True)
        if isinstance(message, ResultMessage):
            failed = bool(message.is_error)
            print(message.result or "", flush=True)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    return asyncio.run(_turn(_options(sys.argv[1:] if argv is None else argv)))


if __name__ == "__main__":
    raise SystemExit(main())
