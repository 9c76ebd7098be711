# The lab's side of the ACP agents' fork server
# (faultlab/runtime/acp/forkserver.py): the classic fork server's connection
# (faultlab/lab/process/forkserver.py: request routing, exit statuses, the server as
# the one reaper) started on the ACP module, with a spawn that also hands
# over the agent's stdin and stdout.
from __future__ import annotations

from collections.abc import Mapping, Sequence

from faultlab.lab.process.forkserver import ForkedProcess, ForkServer, shared_server

__all__ = ["AcpForkServer", "shared_acp_server"]


class AcpForkServer(ForkServer):
    """A fork server whose children are ACP agents."""

    module = "faultlab.runtime.acp.forkserver"
    what = "the ACP fork server"

    def spawn_agent(
        self, argv: Sequence[str], *, env: Mapping[str, str], fds: Sequence[int],
        cwd: str | None = None, timeout: float = 30.0,
    ) -> ForkedProcess:  # fmt: skip
        """Fork an agent running `python -m faultlab.runtime.acp *argv` with
        `fds` = (stdin, stdout, stderr, report, reply)."""
        return self.request(argv, env=env, fds=fds, cwd=cwd, timeout=timeout)


def shared_acp_server() -> AcpForkServer:
    """This process's ACP fork server, started on first use and closed at exit."""
    return shared_server(AcpForkServer)
