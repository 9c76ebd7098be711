# The ACP agents' fork server (faultlab/runtime/acp/forkserver.py), as the
# lab shares it: every fork server's connection (faultlab/lab/process/forkserver.py:
# request routing, exit statuses, the server as the one reaper) started on
# the ACP module; a child's fds are (stdin, stdout, stderr, report, reply).
from __future__ import annotations

from faultlab.lab.process.forkserver import ForkServer, shared_server

__all__ = ["ACP_SERVER", "shared_acp_server"]

ACP_SERVER = "faultlab.runtime.acp.forkserver"


def shared_acp_server() -> ForkServer:
    """This process's ACP fork server, started on first use and closed at exit."""
    return shared_server(ACP_SERVER, what="the ACP fork server")
