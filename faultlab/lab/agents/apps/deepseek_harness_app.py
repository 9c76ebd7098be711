# Drives deepseek-harness for faultlab (adapter `deepseek-harness`): the
# runtime speaks JSON-RPC on stdio (`dsh --profile sdk`), not a one-shot
# command line, so this script uses the published Python SDK to send one
# prompt to a new session or to resume a saved one.  Written from the SDK's
# documented API (0.2.1rc2: DeepSeekHarness, start_session, resume_session,
# run; `patches` carries the adapter's patch that mounts the lab's MCP
# server).  Run as a script with the installed SDK on sys.path (the adapter
# sets PYTHONPATH).
from __future__ import annotations

import argparse
import os
import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="One deepseek-harness turn (new or resumed).")
    parser.add_argument("--dsh-home", required=True)
    parser.add_argument("--workdir", required=True)
    # The model server's URL holds the case's secret: it comes in the
    # environment, not on the command line (docs/security.md).
    parser.add_argument("--base-url", default=os.environ.get("DEEPSEEK_BASE_URL"),
                        help="the model server (default: $DEEPSEEK_BASE_URL)")
    parser.add_argument("--model", default="faultlab-model")
    parser.add_argument("--session-id", required=True)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--patch", action="append", default=[], help="a profile patch file")
    parser.add_argument("--prompt", required=True)
    # The SDK gives the runtime 30 s to initialise (its MCP servers, the
    # lab's tool server among them, started); on a loaded machine that ran
    # out and the app exited 1 before its first request, which the lab read
    # as the agent's failure (DRIFT in a crash run, SESSION_NOT_FOUND in a
    # resume).  The lab's own --timeout judges a hang, so the app waits longer.
    parser.add_argument("--initialize-timeout", type=float, default=600.0,
                        help="seconds the runtime may take to initialise (SDK default: 30)")
    opts = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if not opts.base_url:
        parser.error("--base-url or DEEPSEEK_BASE_URL is required")
    from deepseek_harness import DeepSeekHarness  # type: ignore[import-not-found, unused-ignore]

    harness_options = {"initialize_timeout_seconds": opts.initialize_timeout,
                       "patches": tuple(opts.patch)}  # fmt: skip
    with DeepSeekHarness(dsh_home=opts.dsh_home, cwd=opts.workdir, base_url=opts.base_url,
                         api_key=os.environ.get("DEEPSEEK_API_KEY", "dummy"), model=opts.model,
                         **harness_options) as harness:  # fmt: skip
        session = (harness.resume_session(opts.session_id) if opts.resume
                   else harness.start_session(opts.session_id))  # fmt: skip
        result = session.run(opts.prompt)
    print(result.final_response, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
