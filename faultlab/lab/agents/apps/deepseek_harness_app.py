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
    opts = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if not opts.base_url:
        parser.error("--base-url or DEEPSEEK_BASE_URL is required")
    from deepseek_harness import DeepSeekHarness  # type: ignore[import-not-found, unused-ignore]

    with DeepSeekHarness(dsh_home=opts.dsh_home, cwd=opts.workdir, base_url=opts.base_url,
                         api_key=os.environ.get("DEEPSEEK_API_KEY", "dummy"), model=opts.model,
                         patches=tuple(opts.patch)) as harness:  # fmt: skip
        session = (harness.resume_session(opts.session_id) if opts.resume
                   else harness.start_session(opts.session_id))  # fmt: skip
        result = session.run(opts.prompt)
    print(result.final_response, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
