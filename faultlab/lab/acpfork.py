# The lab's side of the ACP agents' fork server
# (faultlab/runtime/acp/forkserver.py): the classic fork server's connection
# (faultlab/lab/forkserver.py: request routing, exit statuses, the server as
# the one reaper) started on the ACP module, with a spawn that also hands
# over the agent's stdin and stdout.
from __future__ import annotations

import atexit
import itertools
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from faultlab.lab.forkserver import ForkedProcess, ForkServer, ForkServerError

__all__ = ["AcpForkServer", "shared_acp_server"]


class AcpForkServer(ForkServer):
    """A fork server whose children are ACP agents."""

    def __init__(self, *, python: str = sys.executable) -> None:
        lab_end, server_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._process = subprocess.Popen(
                [python, "-m", "faultlab.runtime.acp.forkserver", str(server_end.fileno())],
                pass_fds=(server_end.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            server_end.close()
        self._sock = lab_end
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[threading.Event, list[Any]]] = {}
        self._children: dict[int, ForkedProcess] = {}
        self._early_exits: dict[int, int] = {}
        self._closed = False
        self._reader = threading.Thread(target=self._read, name="faultlab-acpfork", daemon=True)
        self._reader.start()

    def spawn_agent(
        self, argv: Sequence[str], *, env: Mapping[str, str], fds: Sequence[int],
        cwd: str | None = None, timeout: float = 30.0,
    ) -> ForkedProcess:  # fmt: skip
        """Fork an agent running `python -m faultlab.runtime.acp *argv` with
        `fds` = (stdin, stdout, stderr, report, reply)."""
        request_id = next(self._ids)
        ready = threading.Event()
        answer: list[Any] = []
        message = {"id": request_id, "argv": list(argv), "env": dict(env), "cwd": cwd}
        with self._lock:
            if self._closed:
                raise ForkServerError("the ACP fork server is closed")
            self._pending[request_id] = (ready, answer)
            try:
                socket.send_fds(self._sock, [orjson.dumps(message)], list(fds))
            except OSError as exc:
                del self._pending[request_id]
                raise ForkServerError(f"the ACP fork server is gone: {exc}") from None
        if not ready.wait(timeout):
            raise ForkServerError(f"the ACP fork server did not answer within {timeout:g}s")
        reply = answer[0]
        if not isinstance(reply, ForkedProcess):
            raise ForkServerError(f"the ACP fork server could not fork: {reply.get('error')}")
        return reply


_shared: AcpForkServer | None = None
_shared_lock = threading.Lock()


def shared_acp_server() -> AcpForkServer:
    """This process's ACP fork server, started on first use and closed at exit."""
    global _shared
    with _shared_lock:
        if _shared is None or _shared._closed:
            _shared = AcpForkServer()
            atexit.register(_shared.close)
        return _shared
