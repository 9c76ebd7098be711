# Child side of the boundary protocol (docs/probe-protocol.md).
#
# This is the only faultlab module the runtime imports from outside
# `faultlab.runtime`.  It owns the names of the boundaries, the environment
# variables that attach a child to the lab, the report pipe (one JSON line per
# boundary or fact) and parking at the armed occurrence.  Not under the lab,
# `PROBE.enabled` is False and a call site costs one attribute check:
#
#     if PROBE.enabled:
#         PROBE.reach("tool/durable", callId=call_id)
from __future__ import annotations

import _thread
import os
import queue
import select
from collections.abc import Callable, Mapping
from typing import Any

import orjson

__all__ = [
    "BOUNDARIES",
    "ENV_ARM",
    "ENV_FDS",
    "ENV_TRACED",
    "EXIT_LAB_GONE",
    "FAULTS",
    "PROBE",
    "RELEASED",
    "Probe",
    "ProbeError",
    "parse_occurrence",
    "process_gone",
]

BOUNDARIES = (
    "turn/started",
    "request/logged",
    "request/durable",
    "model/chunk",
    "assistant/recorded",
    "tool/logged",
    "tool/durable",
    "tool/effect",
    "tool/returned",
    "step/logged",
    "step/durable",
    "turn/logged",
    "turn/durable",
    "flush/written",
    "repair/logged",
    "repair/durable",
    "tail/kept",
    "tail/cut",
)

FAULTS = (
    "sigkill",
    "power-loss",
    "torn-write",
    "io-error",
    "io-error-enospc",
    "fsync-error",
    "fsync-enospc",
    "cancel-in-checkpoint",
    "sigterm",
    "crash-in-repair",
    "second-writer",
    "corrupt-committed",
)

# "REPORT_FD,REPLY_FD": the child writes reports to the first, reads replies
# from the second.  Both are inherited pipe ends.
ENV_FDS = "FAULTLAB_PROBE_FDS"
# "name#n": the occurrence at which the child parks and waits for a reply.
ENV_ARM = "FAULTLAB_ARM"
# Set ("1") when the lab records the child's system calls: every report is
# then written at once, before the child's next system call, so the lab can
# place each report between the file calls it came between.
ENV_TRACED = "FAULTLAB_TRACED"

# The key of the last report of a fork server's child that closed every fd
# but its probe pipes and is about to exit: {"exiting": CODE} (the fork
# server writes it, never a target; see docs/fork-server.md).
RELEASED = "exiting"

# Exit status of a child whose lab went away (its reply pipe closed).
EXIT_LAB_GONE = 70
# Buffered reports are written once this many bytes are pending (well under
# a pipe's 64 KiB, so one write rarely waits for the lab to read).
_BUFFER_LIMIT = 16384


def process_gone(pidfd: int, timeout: float | None) -> bool:
    """Wait (`timeout` seconds, None: as long as it takes) until the process
    `pidfd` refers to has exited; whether it has.  A pidfd becomes readable
    only after the process closed its fds, so its locks are free by then.
    The fork server's child that repairs a crash waits so for the crash
    child (the "after" of a request, docs/fork-server.md), as does the lab
    before it execs such a child itself."""
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    return bool(poller.poll(None if timeout is None else int(timeout * 1000)))


class ProbeError(ValueError):
    """The probe environment or a kill point is malformed."""


def parse_occurrence(text: str) -> tuple[str, int]:
    """Split ``"tool/durable#2"`` into ``("tool/durable", 2)``; ``#1`` is implied."""
    name, sep, count = text.partition("#")
    if name not in BOUNDARIES:
        raise ProbeError(f"unknown boundary {name!r} (known: {', '.join(BOUNDARIES)})")
    if not sep:
        return name, 1
    # ASCII digits only: str.isdigit() also accepts '²', which int() refuses.
    if not (count.isascii() and count.isdigit()) or len(count) > 9 or int(count) < 1:
        raise ProbeError(
            f"occurrence number in {text[:60]!r} must be a whole number >= 1 (at most 9 digits)"
        )
    return name, int(count)


class Probe:
    """Reports boundaries to the lab and parks at the armed occurrence."""

    def __init__(self) -> None:
        self.enabled = False
        self._report_fd = -1
        self._reply_fd = -1
        self._armed: tuple[str, int] | None = None
        self._counts: dict[str, int] = {}
        self._replies: queue.Queue[dict[str, Any]] = queue.Queue()
        self._handlers: dict[str, Callable[[dict[str, Any]], None]] = {}
        self._buffered = False
        self._pending: list[bytes] = []
        self._pending_size = 0
        self._send_lock = _thread.allocate_lock()  # keeps lines whole and in order

    def attach_from_environ(
        self, environ: Mapping[str, str] | None = None, *, buffered: bool = False
    ) -> bool:
        """Attach to the lab if the environment names probe pipes; return
        whether attached.  `buffered`: see `attach`."""
        env = os.environ if environ is None else environ
        fds = env.get(ENV_FDS)
        if not fds:
            return False
        try:
            report_text, reply_text = fds.split(",")
            report_fd, reply_fd = int(report_text), int(reply_text)
        except ValueError:
            raise ProbeError(f"{ENV_FDS}={fds!r}: expected 'REPORT_FD,REPLY_FD'") from None
        armed = env.get(ENV_ARM)
        if env.get(ENV_TRACED):
            buffered = False  # the syscall trace must show each report in place
        self.attach(
            report_fd, reply_fd, armed=parse_occurrence(armed) if armed else None,
            buffered=buffered,
        )  # fmt: skip
        return True

    def attach(
        self, report_fd: int, reply_fd: int, *, armed: tuple[str, int] | None,
        buffered: bool = False,
    ) -> None:  # fmt: skip
        """Report to `report_fd`, take replies from `reply_fd`, park at `armed`.

        `buffered`: keep reports in memory and write them in one go when
        parking, when `flush` is called, or when _BUFFER_LIMIT bytes are
        pending, instead of one write per report.  Every report still reaches
        the lab before the child parks, so the lab's ground truth at a kill
        point is the same; the lab is just not woken ~20 times per child run
        (each wake-up took CPU from the child on a 2-core machine).  The
        owner must call `flush` before it exits; a process that can go idle
        waiting for its peer (a server) must not buffer."""
        self._report_fd = report_fd
        self._reply_fd = reply_fd
        self._armed = armed
        self._counts = {}
        self._buffered = buffered
        self._pending = []
        self._pending_size = 0
        # One daemon thread owns the reply pipe: it hands replies to a parked
        # main thread, and when the pipe closes (the lab died) it ends the
        # process at once, parked or not, so no child outlives its lab.  A
        # bare `_thread` thread: `threading.Thread` costs a forked child
        # about 0.4 ms more (its bookkeeping objects, the start handshake).
        _thread.start_new_thread(self._watch_replies, ())
        self.enabled = True

    def reach(self, boundary: str, **facts: Any) -> None:
        """Report one occurrence of `boundary`; park there if it is the armed one."""
        n = self._counts.get(boundary, 0) + 1
        self._counts[boundary] = n
        armed = self._armed == (boundary, n)
        message: dict[str, Any] = {"boundary": boundary, "n": n, **facts}
        if armed:
            message["parked"] = True
        self._send(message, now=armed)
        if armed:
            self._park()

    def fact(self, kind: str, **facts: Any) -> None:
        """Report a fact that is not a kill point (writes, fsyncs, flush results)."""
        self._send({"fact": kind, **facts})

    def flush(self) -> None:
        """Write every pending report (buffered mode; a no-op otherwise)."""
        if self.enabled:
            with self._send_lock:
                self._write_pending()

    def _send(self, message: dict[str, Any], *, now: bool = False) -> None:
        line = orjson.dumps(message, option=orjson.OPT_APPEND_NEWLINE)
        with self._send_lock:
            self._pending.append(line)
            self._pending_size += len(line)
            if now or not self._buffered or self._pending_size >= _BUFFER_LIMIT:
                self._write_pending()

    def _write_pending(self) -> None:
        if not self._pending:
            return
        data = b"".join(self._pending)
        self._pending.clear()
        self._pending_size = 0
        try:
            written = 0
            while written < len(data):
                written += os.write(self._report_fd, data[written:])
        except OSError:
            os._exit(EXIT_LAB_GONE)

    def on(self, action: str, handler: Callable[[dict[str, Any]], None]) -> None:
        """Let the runtime act on a lab reply `action` (e.g. "fail-next-flush")
        received while parked; the child stays parked until "continue"."""
        self._handlers[action] = handler

    def _park(self) -> None:
        while True:
            reply = self._replies.get()
            action = reply.get("action")
            if action == "continue":
                return
            handler = self._handlers.get(str(action))
            if handler is not None:
                handler(reply)

    def _watch_replies(self) -> None:
        buffer = b""
        while True:
            try:
                data = os.read(self._reply_fd, 65536)
            except OSError:
                data = b""
            if not data:
                os._exit(EXIT_LAB_GONE)
            buffer += data
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                try:
                    reply = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(reply, dict):
                    self._replies.put(reply)


PROBE = Probe()
