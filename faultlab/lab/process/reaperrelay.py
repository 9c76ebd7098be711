# The way out of the tree's network namespace (faultlab/lab/process/reaper.py):
# 127.0.0.1:PORT inside it relayed to the lab's Unix sockets, one pair of
# `_End`s per connection, served from the supervisor's select loop.  Stdlib
# only, no faultlab import: the supervisor runs as `python -I -S`.
from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported: it costs the supervisor's start time
if TYPE_CHECKING:
    import socket  # imported where a relay is made: most trees have none (~8 ms a start)

__all__ = ["_End", "_Relays"]


class _End:
    """One socket of a relayed connection: what is still to be written to it."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.pending = bytearray()
        self.ended = False  # it sent its end of file (or failed)
        self.peer: _End = self


class _Relays:
    """127.0.0.1:PORT inside the tree's network namespace, relayed to the
    lab's Unix sockets.  Single-threaded (non-blocking, served from the
    supervisor's select loop): after unshare(CLONE_NEWPID) a process may
    not create threads."""

    _ROOM = 1 << 20  # bytes buffered per direction before reading pauses

    def __init__(self) -> None:
        self.listeners: dict[int, tuple[socket.socket, str]] = {}  # by fd
        self.ends: dict[int, _End] = {}  # by fd

    def listen(self, port: int, path: str) -> None:
        import socket

        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(64)
        listener.setblocking(False)
        self.listeners[listener.fileno()] = (listener, path)

    def close_listeners(self) -> None:
        for listener, _path in self.listeners.values():
            listener.close()

    def readers(self) -> list[int]:
        return list(self.listeners) + [
            fd for fd, end in self.ends.items()
            if not end.ended and len(end.peer.pending) < self._ROOM
        ]  # fmt: skip

    def writers(self) -> list[int]:
        return [fd for fd, end in self.ends.items() if end.pending]

    def serve(self, readable: list[int], writable: list[int]) -> None:
        for fd in readable:
            if fd in self.listeners:
                self._accept(*self.listeners[fd])
            elif (end := self.ends.get(fd)) is not None:
                self._read(end)
        for fd in writable:
            if (end := self.ends.get(fd)) is not None:
                self._write(end)

    def _accept(self, listener: socket.socket, path: str) -> None:
        try:
            agent, _ = listener.accept()
        except OSError:
            return
        import socket

        lab = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            lab.connect(path)  # a local socket: at once
        except OSError:
            agent.close()  # the lab's server is gone: the agent sees its connection end
            lab.close()
            return
        a, b = _End(agent), _End(lab)
        a.peer, b.peer = b, a
        for end in (a, b):
            end.sock.setblocking(False)
            self.ends[end.sock.fileno()] = end

    def _read(self, end: _End) -> None:
        try:
            data = end.sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            end.peer.pending += data
            return
        end.ended = True  # the agent was killed, or a side closed: pass the end on
        if not end.peer.pending:
            self._shut(end.peer)
        self._maybe_close(end)

    def _write(self, end: _End) -> None:
        try:
            sent = end.sock.send(end.pending)
        except BlockingIOError:
            return
        except OSError:
            end.pending.clear()
            end.ended = end.peer.ended = True
            self._maybe_close(end)
            return
        del end.pending[:sent]
        if not end.pending and end.peer.ended:
            self._shut(end)
        self._maybe_close(end)

    @staticmethod
    def _shut(end: _End) -> None:
        import socket

        try:  # noqa: SIM105
            end.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def _maybe_close(self, end: _End) -> None:
        pair = (end, end.peer)
        if all(e.ended and not e.peer.pending for e in pair):
            for e in pair:
                self.ends.pop(e.sock.fileno(), None)
                e.sock.close()
