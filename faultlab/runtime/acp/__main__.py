# Entry point: `python -m faultlab.runtime.acp SCENARIO --sessions-dir DIR`
# serves the scenario's scripted sessions as an ACP agent on stdin/stdout
# (JSON-RPC through the agent-client-protocol SDK); each session lives in
# DIR/<sessionId>/.  It narrates on stderr only: stdout is the protocol.
# The probe protocol works as in `python -m faultlab.runtime`.  Exit codes:
# 0 the client closed stdin, 2 usage or scenario error, 3 internal error,
# 7 stopped gracefully by SIGTERM/SIGINT (every session closed in order).
from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import traceback
from pathlib import Path
from typing import cast

from faultlab.probe import PROBE, ProbeError
from faultlab.runtime import EXIT_CODES
from faultlab.runtime.checkpoints import POLICIES
from faultlab.runtime.stopsignals import stop_signals
from faultlab.scenario import Scenario, ScenarioError, load_scenario

__all__ = ["main", "serve"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m faultlab.runtime.acp",
        description="Serve a faultlab scenario as an ACP agent over stdio.",
    )
    parser.add_argument("scenario", help="scenario file (TOML)")
    parser.add_argument(
        "--sessions-dir", required=True, help="directory holding one subdirectory per session"
    )
    parser.add_argument("--policy", choices=sorted(POLICIES), help="override the scenario's policy")
    parser.add_argument("--quiet", action="store_true", help="print only errors")
    return parser


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


async def serve(scenario: Scenario, sessions_dir: Path, *, policy: str | None, quiet: bool) -> int:
    """Serve until stdin closes (0) or SIGTERM/SIGINT (7)."""
    import acp

    from faultlab.runtime.acp.server import ReferenceAcpAgent

    say = (lambda _text: None) if quiet else _say
    agent = ReferenceAcpAgent(scenario, sessions_dir, policy=policy, say=say)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    with stop_signals(loop, lambda _name: stop.set()):
        listening = loop.create_task(acp.run_agent(cast(acp.Agent, agent)))
        stopping = loop.create_task(stop.wait())
        await asyncio.wait({listening, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopped = stop.is_set()
        if stopped:
            say("stopping: closing every session (bridge, quiesce, policy, persistence)")
        await agent.shutdown()
        for _ in range(20):  # let the last responses reach the SDK's send queue
            await asyncio.sleep(0)
        stopping.cancel()
        if not listening.done():
            listening.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await listening
    return EXIT_CODES["stopped"] if stopped else EXIT_CODES["ok"]


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        PROBE.attach_from_environ()
        scenario = load_scenario(args.scenario)
    except (ScenarioError, ProbeError) as exc:
        print(f"faultlab.runtime.acp: error: {exc}", file=sys.stderr, flush=True)
        return EXIT_CODES["usage"]
    sessions = Path(args.sessions_dir)
    try:
        sessions.mkdir(parents=True, exist_ok=True)
        return asyncio.run(serve(scenario, sessions, policy=args.policy, quiet=args.quiet))
    except OSError as exc:
        print(f"faultlab.runtime.acp: error: {exc}", file=sys.stderr, flush=True)
        return EXIT_CODES["persistence"]
    except Exception:
        traceback.print_exc()
        return EXIT_CODES["internal"]


if __name__ == "__main__":
    sys.exit(main())
