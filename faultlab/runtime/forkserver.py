# The runtime's fork server: a single-threaded process that has imported the
# runtime and forks one real child per request, each running
# `faultlab.runtime` with its probe pipes, so a crash case costs a fork
# instead of an interpreter start.  The loop, the children forked ahead, the
# protocol and the containment of each child are every fork server's
# (faultlab/forking/serve.py); what is the runtime's is here: its fds (the
# probe pipes and stderr), the warm-up a child forked ahead runs while it
# waits, and the scenarios parsed once (faultlab/runtime/forkchild.py is
# what a child does once handed its request).
from __future__ import annotations

import gc
import sys

from faultlab.forking.serve import AHEAD, COLD, ServerArguments, serve_requests, server_arguments
from faultlab.runtime import __main__ as entry
from faultlab.runtime.forkchild import FD_ORDER, remember_scenario, run_child

__all__ = ["AHEAD", "COLD", "serve", "server_arguments"]


def serve(arguments: ServerArguments) -> None:
    """Serve the lab on socket `arguments.fd`, keeping `arguments.ahead`
    children forked ahead, which warm up while they wait if `arguments.warm`
    (see below)."""
    entry.warm_up()
    # Objects that exist now live as long as the server: keep the collector
    # off them, so children do not copy their pages just to scan them.
    gc.freeze()
    # A child forked ahead runs the warm-up again while it waits: the same
    # code on the same objects as the server's, so it changes nothing, but
    # the pages every run writes to (the event loop's machinery above all)
    # are copied now rather than after the lab asked for the child: about
    # half of a run's copy-on-write faults move off the case's critical path.
    # That pays only where a core would otherwise idle: when the lab runs
    # more cases at once than there are cores, the warm-up competes with them
    # for CPU and time (the lab then asks for `cold` children).
    serve_requests(
        arguments, FD_ORDER, run_child, prepare=entry.warm_up if arguments.warm else None,
        after_hand_over=remember_scenario,
    )  # fmt: skip


if __name__ == "__main__":
    serve(server_arguments(sys.argv[1:]))
