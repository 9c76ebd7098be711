# The fork server of faultlab's MCP tool server (`python -m
# faultlab.lab.servers.mcpfork FD [AHEAD] [flat]`): a single-threaded
# process that has imported the tool server and the `mcp` SDK once (about
# 1.2 CPU-seconds, paid at every agent start when the agent execs the server:
# benchmarks/README.md, "The MCP SDK's start-up CPU"), and forks one child per
# request that runs `mcptools.main(argv)` on the request's stdin, stdout and
# stderr, the pipes the agent gave its MCP server (passed on by the shim the
# agent started, faultlab/lab/servers/mcpshim.py, through the case's relay,
# faultlab/lab/servers/toolrelay.py).  The loop, the protocol and the
# containment of each child are every fork server's (faultlab/forking/serve.py).
from __future__ import annotations

import gc
import os
import signal
import sys
import threading
from typing import Any

from faultlab.forking.child import MAX_FD, ForkChild, enter_child
from faultlab.forking.script import run_main
from faultlab.forking.serve import serve_requests, server_arguments

__all__ = ["FD_ORDER", "TOOL_FORK_SERVER", "serve"]

FD_ORDER = ("stdin", "stdout", "stderr")
TOOL_FORK_SERVER = "faultlab.lab.servers.mcpfork"
_PROGRAM = "faultlab.lab.servers.mcptools"


def _child() -> ForkChild:
    """What a forked child runs once handed its request: the tool server's
    `main(argv)` on the agent's pipes, then what an interpreter does at exit."""

    def run(request: dict[str, Any], fds: list[int], keep: set[int]) -> int:
        signal.signal(signal.SIGINT, signal.default_int_handler)  # as an exec'd server has it
        enter_child(request, stdio=(fds[0], fds[1], fds[2]), probe=None,
                    close=keep | set(fds), program=_PROGRAM)  # fmt: skip
        os.closerange(3, MAX_FD)  # as an exec'd server has none of the server's fds

        def main() -> int:
            from faultlab.lab.servers import mcptools  # imported already, by the server

            return mcptools.main(list(request["argv"]))

        return run_main(main)

    return run


def serve(argv: list[str]) -> None:
    """Import the tool server and the SDK, then fork one tool server per
    request on the lab's socket until the lab goes away."""
    arguments = server_arguments(argv)
    refusal = None
    gc.disable()  # the SDK's ~550 pydantic classes: nothing to collect meanwhile
    try:
        import faultlab.lab.servers.mcpserve
        import faultlab.lab.servers.mcptools  # noqa: F401
    except Exception as exc:  # each child meets the error itself, as an exec'd one would
        refusal = f"the tool server does not import: {exc}"
    finally:
        gc.freeze()  # what the import made lives as long as the server: no child scans it
        gc.enable()
    if threading.active_count() != 1:
        refusal = "importing the MCP SDK left threads running: a fork server must not fork them"
    serve_requests(arguments, FD_ORDER, _child(), refusal=refusal, prepare=_while_waiting)


def _while_waiting() -> None:
    """A child forked ahead, not yet anyone's server: a stray SIGINT (one
    seen once in a long campaign, its sender not found) must not print a
    KeyboardInterrupt traceback on the lab's stderr."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


if __name__ == "__main__":
    serve(sys.argv[1:])
