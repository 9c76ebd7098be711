# The ACP agent's fork server: a single-threaded process that has imported
# the ACP SDK and the runtime, and forks one real agent per request, so an
# ACP crash case costs a fork instead of an interpreter start plus the SDK's
# import.  Every fork server's loop, protocol and containment
# (faultlab/forking/serve.py), with five fds per request: the agent's stdin
# and stdout (the ACP pipes), stderr, and the probe pipes.  A request may
# name a script (an ACP zoo variant: a script that patches the runtime and
# serves it): the child runs it as `__main__` instead.
from __future__ import annotations

import gc
import sys
from typing import Any

from faultlab.forking.child import enter_child
from faultlab.forking.script import run_script
from faultlab.forking.serve import ServerArguments, serve_requests, server_arguments

__all__ = ["FD_ORDER", "serve"]

FD_ORDER = ("stdin", "stdout", "stderr", "report", "reply")


def _child(request: dict[str, Any], fds: list[int], keep: set[int]) -> int:
    """Runs in the forked child: the agent on its ACP pipes, with its probe
    pipes; or the request's script (an ACP zoo variant) as `__main__`."""
    from faultlab.runtime.acp.__main__ import main

    named = dict(zip(FD_ORDER, fds, strict=True))
    script = request.get("script")
    enter_child(
        request, stdio=(named["stdin"], named["stdout"], named["stderr"]),
        probe=(named["report"], named["reply"]), close=keep | set(fds),
        program=script or "faultlab.runtime.acp",
    )  # fmt: skip
    if script:
        return run_script(script)
    return main(request["argv"])


def serve(arguments: ServerArguments) -> None:
    import acp  # noqa: F401  (the point of the server: imported once)

    import faultlab.runtime.acp.server  # noqa: F401

    gc.freeze()
    # Its children have no warm-up: `cold` changes nothing here.
    serve_requests(arguments, FD_ORDER, _child)


if __name__ == "__main__":
    serve(server_arguments(sys.argv[1:]))
