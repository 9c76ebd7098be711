# The way out of the tree's network namespace (faultlab/lab/process/reaper.py):
# 127.0.0.1:PORT inside it relayed to the lab's Unix sockets, one pair of
# `_End`s per connection, served from the supervisor's select loop; and the
# namespace's resolver stub on 127.0.0.1:53, which answers every name
# NXDOMAIN at once (nothing outside is reachable anyway: an agent whose
# resolver retries an unreachable server would wait seconds per look-up) and
# says each distinct name to the lab.  Stdlib only, no faultlab import: the
# supervisor runs as `python -I -S`.
from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported: it costs the supervisor's start time
if TYPE_CHECKING:
    import socket  # imported where a relay is made: most trees have none (~8 ms a start)
    from collections.abc import Callable

__all__ = ["MAX_NAMES", "_End", "_Relays", "_nxdomain", "_qname"]

MAX_NAMES = 64  # distinct names said to the lab: their lines fit in the status pipe


def _question_end(query: bytes) -> int:
    """Where the first question of a DNS query ends (its labels, type and
    class), or 0 if it has none or it is malformed."""
    if len(query) < 12 or query[4:6] == b"\x00\x00":
        return 0
    at = 12
    while at < len(query) and at < 12 + 256:
        size = query[at]
        if size == 0:
            return at + 5 if at + 5 <= len(query) else 0
        if size & 0xC0:  # a compression pointer cannot start a query's name
            return 0
        at += 1 + size
    return 0


def _qname(query: bytes) -> str:
    """The first question's name, lower case ('' if there is none or it is malformed)."""
    end = _question_end(query)
    labels, at = [], 12
    while end and query[at]:
        labels.append(query[at + 1 : at + 1 + query[at]].decode("ascii", "replace"))
        at += 1 + query[at]
    return ".".join(labels).lower()[:255]


def _nxdomain(query: bytes) -> bytes | None:
    """The answer to a DNS query: NXDOMAIN for a standard query (its id,
    opcode, RD flag and first question echoed), NOTIMP for another opcode,
    FORMERR if its question is malformed; None for a response or a runt."""
    if len(query) < 12 or query[2] & 0x80:
        return None
    opcode = (query[2] >> 3) & 0x0F
    end = _question_end(query)
    rcode = 1 if not end else (3 if opcode == 0 else 4)
    flags = bytes((0x80 | (query[2] & 0x79), 0x80 | rcode))
    counts = (b"\x00\x01" if end else b"\x00\x00") + b"\x00" * 6
    return query[:2] + flags + counts + (query[12:end] if end else b"")


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
        self.stub: socket.socket | None = None  # the resolver stub, once started
        self.names: set[str] = set()
        self._say: Callable[[str], None] | None = None  # the supervisor's report writer

    def answer_names(self, say: Callable[[str], None]) -> None:
        """Start the resolver stub on 127.0.0.1:53 (UDP); OSError if it cannot."""
        import socket

        stub = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            stub.bind(("127.0.0.1", 53))
        except OSError:
            stub.close()
            raise
        stub.setblocking(False)
        self.stub, self._say = stub, say

    def _answer(self) -> None:
        assert self.stub is not None
        for _ in range(64):  # what is queued now; the loop comes back for more
            try:
                query, peer = self.stub.recvfrom(4096)
            except OSError:
                return
            reply = _nxdomain(query)
            if reply is None:
                continue
            try:  # noqa: SIM105
                self.stub.sendto(reply, peer)
            except OSError:
                pass
            name = _qname(query)
            if name and name not in self.names and len(self.names) < MAX_NAMES:
                self.names.add(name)
                shown = "".join(c if c.isprintable() and not c.isspace() else "?" for c in name)
                if self._say is not None:
                    self._say(f"dns {shown}")

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
        if self.stub is not None:
            self.stub.close()
            self.stub = None

    def readers(self) -> list[int]:
        stub = [self.stub.fileno()] if self.stub is not None else []
        return stub + list(self.listeners) + [
            fd for fd, end in self.ends.items()
            if not end.ended and len(end.peer.pending) < self._ROOM
        ]  # fmt: skip

    def writers(self) -> list[int]:
        return [fd for fd, end in self.ends.items() if end.pending]

    def serve(self, readable: list[int], writable: list[int]) -> None:
        for fd in readable:
            if self.stub is not None and fd == self.stub.fileno():
                self._answer()
            elif fd in self.listeners:
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
