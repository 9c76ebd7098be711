# One case's tool-server relay: the agent starts faultlab's MCP tool server
# as a shim (faultlab/lab/servers/mcpshim.py) that hands its stdio here over
# a Unix socket; the relay has the lab's tool-server fork server
# (faultlab/lab/servers/mcpfork.py, the SDK imported once per lab process)
# fork the tool server on those pipes, and ties the two together: the
# server's exit status goes back to the shim, which leaves with it; a signal
# the shim gets is passed on; a shim that dies (the agent's tree killed)
# takes its server with it.  The server runs with the case's arguments, the
# rig's, whatever a peer asks: the socket is reachable by the agent, and a
# message is read bounded, from this user only, and can start nothing else.
#
# The kill of a case must leave no server of a dead shim running when the
# gate lets held calls go on (an exec'd server would have died with the
# tree): `kill_orphans` kills them and waits, synchronously.
from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from faultlab.lab.process.childproc import ChildHung
from faultlab.lab.process.environment import trimmed_environment
from faultlab.lab.process.forkserver import ForkServer, ForkServerError, shared_server
from faultlab.lab.process.tree import ContainedProcess, TreeError
from faultlab.lab.servers.gate import peer_credentials, serve_each
from faultlab.probe import process_gone

__all__ = ["SHIM", "ToolRelay", "relay_wanted", "tool_fork_server"]

SHIM = str(Path(__file__).with_name("mcpshim.py"))
_HELLO = b"tools\n"
_FIRST_MESSAGE_WITHIN = 5.0  # seconds a peer may take to say what it is
_KILLED_WITHIN = 5.0
_PASSED_ON = frozenset({signal.SIGTERM, signal.SIGINT, signal.SIGHUP})


def relay_wanted() -> bool:
    """Whether tool servers are forked (unless FAULTLAB_TOOL_FORK=0: each
    agent execs its own, the fidelity reference)."""
    return os.environ.get("FAULTLAB_TOOL_FORK") != "0"


def tool_fork_server() -> ForkServer:
    """This lab process's tool-server fork server (started on first use)."""
    from faultlab.lab.servers.mcpfork import TOOL_FORK_SERVER

    # No PID namespace: the tool server is faultlab's own and starts nothing,
    # and a namespace's init would ignore the SIGTERM an agent stops it with.
    return shared_server(TOOL_FORK_SERVER, ahead=1, what="the tool-server fork server",
                         pidns=False)  # fmt: skip


@dataclass
class _Served:
    """A tool server forked for one shim."""

    process: ContainedProcess
    shim: int  # a pidfd of the shim (-1: none could be opened; its hang-up tells)

    def shim_gone(self) -> bool:
        return self.shim >= 0 and process_gone(self.shim, 0)


class ToolRelay:
    """Serves shims on the Unix socket `path`: each gets a tool server forked
    with `argv` (mcptools' arguments)."""

    def __init__(self, path: Path, argv: Sequence[str], server: ForkServer) -> None:
        self.path, self.argv, self.server = path, tuple(argv), server
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(path))
        self._listener.listen(8)
        self._lock = threading.Lock()
        self._served: list[_Served] = []
        self._closed = False
        self.refused: list[str] = []  # what peers were turned away for
        threading.Thread(target=serve_each, name="faultlab-tool-relay", daemon=True,
                         args=(self._listener, self._serve, "faultlab-tool-relay-conn")).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            pid, uid = peer_credentials(conn)
            if uid != os.getuid():
                self.refused.append(f"a peer of uid {uid}")
                return
            conn.settimeout(_FIRST_MESSAGE_WITHIN)
            data, fds, _flags, _addr = socket.recv_fds(conn, len(_HELLO), 3)
            try:
                if data != _HELLO or len(fds) != 3:
                    self.refused.append(f"a message of {len(data)} byte(s), {len(fds)} fd(s)")
                    return
                served = self._fork(fds, pid)
            finally:
                for fd in fds:
                    os.close(fd)
            if served is None:
                conn.sendall(b"exec\n")  # the shim execs the server itself
                return
            try:
                conn.sendall(b"forked\n")
            except OSError:  # the shim is gone already: so is its server
                self._end(served)
                return
            conn.settimeout(None)
            threading.Thread(target=self._report_exit, args=(conn, served), daemon=True,
                             name="faultlab-tool-relay-exit").start()  # fmt: skip
            self._pass_signals(conn, served)

    def _fork(self, fds: list[int], pid: int) -> _Served | None:
        with self._lock:
            if self._closed:
                return None
            try:
                process = ContainedProcess.fork(self.server, self.argv, env=trimmed_environment(),
                                                fds=fds)  # fmt: skip
            except (ForkServerError, TreeError, ChildHung) as exc:  # ChildHung: the lab stops
                self.refused.append(f"no fork: {exc}")
                return None
            try:
                shim = os.pidfd_open(pid)
            except OSError:  # pid 0: a peer this namespace cannot see
                shim = -1
            served = _Served(process, shim)
            self._served.append(served)
            return served

    def _report_exit(self, conn: socket.socket, served: _Served) -> None:
        status = None
        while status is None:
            status = served.process.wait(3600.0)
        with contextlib.suppress(OSError):
            conn.sendall(f"exit {status}\n".encode("ascii"))

    def _pass_signals(self, conn: socket.socket, served: _Served) -> None:
        """Signals the shim passes on, until it is gone; then its server goes."""
        pending = b""
        while True:
            try:
                data = conn.recv(64)
            except OSError:
                data = b""
            if not data:
                break
            pending += data
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                number = line.removeprefix(b"signal ")
                if number.isdigit() and int(number) in _PASSED_ON and served.process.poll() is None:
                    served.process.signal(int(number))  # not once it exited: its pid may be reused
            if len(pending) > 64:
                break  # not the shim's protocol: end it
        self._end(served)

    def _end(self, served: _Served) -> None:
        with contextlib.suppress(TreeError):
            served.process.kill_tree(_KILLED_WITHIN)
        served.process.close()
        with self._lock:
            if served in self._served:
                self._served.remove(served)
                if served.shim >= 0:
                    os.close(served.shim)

    def servers(self) -> list[int]:
        """The pids of the tool servers it serves now."""
        with self._lock:
            return [served.process.pid for served in self._served]

    def kill_orphans(self) -> None:
        """Kill, and wait for, every tool server whose shim is gone."""
        with self._lock:
            gone = [s for s in self._served if s.shim_gone()]
        for served in gone:
            self._end(served)

    def close(self) -> None:
        """Stop listening; kill every tool server still running."""
        with self._lock:
            self._closed = True
            left = list(self._served)
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        for served in left:
            self._end(served)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

