# The gate: where faultlab's servers (the scripted model server in the lab,
# the MCP tool server in its own process) report every boundary they reach,
# in order, and where they hold when the case's kill point is reached.  Its
# observations are the black-box oracle's ground truth: what reached the
# model and the tools, never what the agent says about itself.
#
# Out-of-process servers reach it over a Unix socket (`GateBridge` in the
# lab, `GateClient` in the server): one JSON line per report, answered at
# once, or after the kill when the report is the armed occurrence at @0.
# The socket lives in a folder only this user can enter; the bridge serves
# only processes of this user (SO_PEERCRED) and reads a line of at most
# MAX_GATE_LINE bytes (docs/security.md).
from __future__ import annotations

import contextlib
import os
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from faultlab.lab.servers.points import KillPoint
from faultlab.lab.servers.records import GateRecord, boundary_record, fact_record

__all__ = ["MAX_GATE_LINE", "Gate", "GateBridge", "GateClient", "GateClosed",
           "peer_credentials", "serve_each"]

MAX_GATE_LINE = 64 << 20  # one report (a tool call's arguments travel in it)


class GateClosed(Exception):
    """The case's kill came while a server held at the kill point: stop serving."""


class Gate:
    """Thread-safe record of what the servers observed, armed at one kill point."""

    def __init__(self, armed: KillPoint | None = None) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._armed = armed
        self._started = time.monotonic()
        self.observations: list[GateRecord] = []
        self.fired = threading.Event()  # the armed occurrence was reached
        self.released = threading.Event()  # the kill is done: held servers stop
        self.survivors_proceed = False  # after the kill, held out-of-process servers go on
        self.fired_at: GateRecord | None = None

    @property
    def armed(self) -> KillPoint | None:
        return self._armed

    def reach(self, boundary: str, **detail: Any) -> GateRecord:
        """Record occurrence n of `boundary` (n counts per boundary over the
        whole case, across agent restarts).  The record has `"hold": True`
        when it is the armed occurrence at delay 0: the caller must then
        `hold()` before it serves anything more."""
        with self._lock:
            self._counts[boundary] += 1
            n = self._counts[boundary]
            record = boundary_record(boundary, n, time.monotonic() - self._started, detail)
            armed = self._armed
            if (
                armed is not None
                and not self.fired.is_set()
                and (boundary, n) == (armed.boundary, armed.n)
            ):
                record["killPoint"] = True
                self.fired_at = record
                self.fired.set()
            self.observations.append(record)
        if record.get("killPoint") and armed is not None and armed.delay_ms == 0:
            return {**record, "hold": True}
        return record

    def note(self, fact: str, **detail: Any) -> None:
        """Record a fact that is not a kill point (a response sent, a ledger line)."""
        with self._lock:
            self.observations.append(fact_record(fact, time.monotonic() - self._started, detail))

    def hold(self, timeout: float | None = None) -> None:
        """Block until the lab has killed the agent; then raise GateClosed."""
        self.released.wait(timeout)
        raise GateClosed(f"killed at {self._armed}")

    async def hold_async(self, timeout: float | None = None) -> None:
        """`hold` for an event loop: wait without blocking the loop."""
        import asyncio

        await asyncio.to_thread(self.released.wait, timeout)
        raise GateClosed(f"killed at {self._armed}")

    def release(self, *, survivors_proceed: bool = False) -> None:
        """After the kill: held servers stop; nothing more is armed.  With
        `survivors_proceed` (the kill spared processes outside the agent's
        group) a held server in another process goes on as if never held:
        a tool server that outlived the agent finishes the call."""
        with self._lock:
            self._armed = None
            self.survivors_proceed = survivors_proceed
        self.released.set()

    def disarm(self) -> None:
        """Nothing fires any more (the recovery runs unarmed); counts go on."""
        with self._lock:
            self._armed = None

    def snapshot(self) -> list[GateRecord]:
        with self._lock:
            return list(self.observations)


class GateBridge:
    """Serves a Gate on a Unix socket for servers in other processes."""

    def __init__(self, gate: Gate, path: Path) -> None:
        self.gate, self.path = gate, path
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(path))
        self._listener.listen(16)
        self._thread = threading.Thread(target=serve_each, name="faultlab-gate", daemon=True,
                                        args=(self._listener, self._serve, "faultlab-gate-conn"))
        self._thread.start()

    def _serve(self, conn: socket.socket) -> None:
        # A killed server resets its connection mid-line: that ends it, quietly.
        with contextlib.suppress(OSError, ValueError):
            if not _same_user(conn):
                self.gate.note("gate/foreign-peer")
                conn.close()
                return
            self._serve_lines(conn)

    def _serve_lines(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as lines:
            while line := lines.readline(MAX_GATE_LINE + 1):
                if len(line) > MAX_GATE_LINE:
                    self.gate.note("gate/bad-message", line="a line over the limit")
                    return
                try:
                    message = orjson.loads(line)
                    kind = message.pop("op")
                except (orjson.JSONDecodeError, AttributeError, KeyError, TypeError):
                    self.gate.note("gate/bad-message", line=line[:200].decode("utf-8", "replace"))
                    continue
                if kind == "note":
                    self.gate.note(str(message.pop("fact", "?")), **message)
                    continue
                record = self.gate.reach(str(message.pop("boundary", "?")), **message)
                if record.get("hold"):
                    self.gate.released.wait()
                    go_on = self.gate.survivors_proceed
                    reply: dict[str, Any] = {"n": record["n"]} if go_on else {"closed": True}
                else:
                    reply = {"n": record["n"]}
                with contextlib.suppress(OSError):
                    conn.sendall(orjson.dumps(reply, option=orjson.OPT_APPEND_NEWLINE))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


def serve_each(listener: socket.socket, serve: Callable[[socket.socket], None], name: str) -> None:
    """Accept on `listener` until it is shut down, each connection served by
    `serve` in a daemon thread called `name`."""
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=serve, args=(conn,), daemon=True, name=name).start()


def peer_credentials(conn: socket.socket) -> tuple[int, int]:
    """The (pid, uid) of the peer of the Unix socket `conn`, as this
    process's PID namespace sees them (SO_PEERCRED, taken at connect time)."""
    credentials = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                  struct.calcsize("3i"))  # fmt: skip
    pid, uid, _gid = struct.unpack("3i", credentials)
    return int(pid), int(uid)


def _same_user(conn: socket.socket) -> bool:
    """Whether the peer of the Unix socket `conn` runs as this user."""
    return peer_credentials(conn)[1] == os.getuid()


class GateClient:
    """A server process's side of the bridge; without a socket path, a no-op."""

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self._sock: socket.socket | None = None
        self._lines: Any = None
        self._lock = threading.Lock()
        if path:
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self._sock.connect(os.fspath(path))
            self._lines = self._sock.makefile("rb")

    def reach(self, boundary: str, **detail: Any) -> int:
        """Report a boundary; blocks while the lab holds it; raises GateClosed
        when the case's kill came while held.  Returns the occurrence n (0
        without a gate)."""
        if self._sock is None:
            return 0
        with self._lock:
            self._sock.sendall(orjson.dumps({"op": "reach", "boundary": boundary, **detail},
                                            option=orjson.OPT_APPEND_NEWLINE))  # fmt: skip
            line = self._lines.readline()
        if not line:
            raise GateClosed("the lab's gate went away")
        reply = orjson.loads(line)
        if reply.get("closed"):
            raise GateClosed(f"killed at {boundary}")
        return int(reply["n"])

    def note(self, fact: str, **detail: Any) -> None:
        if self._sock is None:
            return
        with self._lock:
            self._sock.sendall(orjson.dumps({"op": "note", "fact": fact, **detail},
                                            option=orjson.OPT_APPEND_NEWLINE))  # fmt: skip
