# Command line of the black-box agent, shaped like a real agent's headless
# mode: `python -m faultlab.runtime.httpagent --model-url URL --mcp-config FILE
# --session-dir DIR [--resume] [--model NAME] PROMPT`.  The final answer goes
# to stdout, narration to stderr.  Exit codes: 0 done, 2 usage (bad arguments
# or MCP config, no session to resume, a session already there without
# --resume), 3 internal error, 4 corrupt session log, 5 session locked, 6 a
# checkpoint could not be made durable (stopped fail-closed), 8 the model
# endpoint failed, 9 an MCP server failed.
from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import traceback

from mcp import MCPError

from faultlab.probe import PROBE, ProbeError
from faultlab.runtime import EXIT_CODES
from faultlab.runtime.backends import (
    SessionCorruptError,
    SessionExistsError,
    SessionLockedError,
    SessionMissingError,
)
from faultlab.runtime.httpagent.client import ModelError
from faultlab.runtime.httpagent.loop import DEFAULT_MODEL, AgentOptions, run_agent
from faultlab.runtime.httpagent.tools import McpConfigError
from faultlab.runtime.persistence import FlushError

__all__ = ["EXIT_MCP", "EXIT_MODEL", "main"]

EXIT_MODEL = 8
EXIT_MCP = 9
ENV_MODEL_URL = "FAULTLAB_MODEL_URL"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m faultlab.runtime.httpagent",
        description="faultlab's reference black-box agent (Anthropic Messages API + MCP).",
    )
    parser.add_argument("prompt", help="the user's message for this turn")
    parser.add_argument("--model-url", default=os.environ.get(ENV_MODEL_URL),
                        help=f"base URL of the model API (default: ${ENV_MODEL_URL}; the "
                        "environment keeps a URL with a secret off the command line)")
    parser.add_argument("--mcp-config", required=True, help='{"mcpServers": {...}} JSON file')
    parser.add_argument("--session-dir", required=True, help="directory of session.jsonl")
    parser.add_argument(
        "--resume", action="store_true", help="repair and continue the session in --session-dir"
    )
    parser.add_argument("--model", default=DEFAULT_MODEL, help="model name sent in requests")
    parser.add_argument("--quiet", action="store_true", help="print only errors on stderr")
    return parser


def _error(text: str) -> None:
    print(f"faultlab.runtime.httpagent: error: {text}", file=sys.stderr, flush=True)


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _leaf(exc: Exception) -> Exception:
    # The MCP SDK's task groups wrap what a turn raised in exception groups.
    while isinstance(exc, ExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def _failed(exc: Exception) -> int:
    """One line on stderr for `exc`, and its exit code."""
    if isinstance(exc, (McpConfigError, SessionExistsError, SessionMissingError)):
        _error(str(exc))
        return EXIT_CODES["usage"]
    if isinstance(exc, SessionCorruptError):
        _error(str(exc))
        return EXIT_CODES["corrupt"]
    if isinstance(exc, SessionLockedError):
        _error(str(exc))
        return EXIT_CODES["locked"]
    if isinstance(exc, FlushError):
        _error(f"stopped fail-closed: {exc}")
        return EXIT_CODES["persistence"]
    if isinstance(exc, ModelError):
        _error(str(exc))
        return EXIT_MODEL
    if isinstance(exc, MCPError):
        _error(f"MCP server: {exc}")
        return EXIT_MCP
    if isinstance(exc, OSError):
        _error(f"{exc.filename or ''}: {exc.strerror or exc}")
        return EXIT_CODES["persistence"]
    traceback.print_exception(exc)
    return EXIT_CODES["internal"]


def main(argv: list[str] | None = None) -> int:
    # The MCP SDK's import (about 1.1 CPU-seconds, ~550 pydantic classes) is
    # done: what it made lives as long as the process, so no later collection
    # (the one at exit included) walks it again (docs/decisions.md).
    gc.freeze()
    parser = _parser()
    args = parser.parse_args(argv)
    if not args.model_url:
        parser.error(f"--model-url or {ENV_MODEL_URL} is required")
    options = AgentOptions(
        model_url=args.model_url,
        mcp_config=args.mcp_config,
        session_dir=args.session_dir,
        prompt=args.prompt,
        resume=args.resume,
        model=args.model,
    )
    say = (lambda _text: None) if args.quiet else _say
    try:
        PROBE.attach_from_environ(buffered=True)  # optional: only with FAULTLAB_PROBE_FDS
    except ProbeError as exc:
        _error(str(exc))
        return EXIT_CODES["usage"]
    try:
        outcome = asyncio.run(run_agent(options, say=say))
    except Exception as raised:
        return _failed(_leaf(raised))
    finally:
        PROBE.flush()
    print(outcome.text, flush=True)
    say(f"done: {outcome.reason}, repaired {outcome.repaired} event(s), log {outcome.log_path}")
    return EXIT_CODES["ok"]


if __name__ == "__main__":
    sys.exit(main())
