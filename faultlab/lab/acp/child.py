# An ACP agent as a lab child: a contained process (tree.py's
# `ContainedProcess`, the one handle of every drive: exec'd under its
# per-case supervisor, or forked by the ACP fork server, a PID namespace of
# its own either way where allowed) given the two probe pipes, its stderr as
# a file (never a pipe nobody reads) and its stdin and stdout as pipes, on
# which the agent-client-protocol SDK's client side is connected
# (`connect_to_agent`: the SDK's own spawn helper can neither pass the probe
# fds nor contain the process).  Every JSON-RPC message exchanged is
# recorded in order; the probe trace is read on the event loop, so a prompt
# and the child parking at its armed boundary can be awaited together.  The
# process's blocking calls (start, wait, the tree's kill) run in threads.
from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

import acp
import orjson
from acp.connection import StreamDirection, StreamEvent

from faultlab.lab.process.forkserver import ForkServer
from faultlab.lab.process.probereport import ProbeReport
from faultlab.lab.process.spawn import ChildExit, ChildHung, trimmed_environment
from faultlab.lab.process.tree import ContainedProcess
from faultlab.probe import ENV_ARM, ENV_FDS

__all__ = ["AcpChild", "Parked"]

T = TypeVar("T")
_LIMIT = 50 * 1024 * 1024  # the SDK's own default line limit
_KILLED = -9  # the status of a child killed that no reaper reported


class Parked(Exception):
    """The child parked at its armed boundary while the lab awaited it."""


class _Client:
    """The lab as an ACP client: it asks nothing of the agent's tools; what the
    agent sends is recorded by the connection's observer."""

    async def session_update(self, session_id: str, update: Any, **_kwargs: Any) -> None:
        return None

    async def request_permission(self, *_args: Any, **_kwargs: Any) -> Any:
        raise acp.RequestError.method_not_found("session/request_permission")


@dataclass(eq=False)
class AcpChild:
    """One ACP agent under the probe: a process handle (`process`), the
    SDK's connection on its stdin and stdout (`conn`) and its probe pipes."""

    argv: Sequence[str]
    stderr_path: Path
    armed: str | None = None
    cwd: str | None = None
    trace: list[ProbeReport] = field(default_factory=list)
    # ("out" | "in", raw JSON-RPC message) in the order they crossed the pipe
    messages: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    conn: Any = None
    pending: asyncio.Future[Any] | None = None  # the request the child parked in
    server: ForkServer | None = None  # fork from this ACP fork server instead of exec
    server_argv: Sequence[str] = ()  # what the server's child runs: agent arguments
    script: str | None = None  # forked: the script the child runs (an ACP zoo variant)
    process: ContainedProcess | None = None  # once started
    _transport: asyncio.WriteTransport | None = None  # the agent's stdin
    _report_fd: int = -1
    _reply_fd: int = -1
    _buffer: bytes = b""
    _parked: asyncio.Event | None = None
    _exited: asyncio.Event | None = None
    _exit: ChildExit | None = None

    async def start(self) -> None:
        if self.process is not None:
            raise RuntimeError("an AcpChild starts once")
        report_r, report_w = os.pipe()
        reply_r, reply_w = os.pipe()
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        probe = {ENV_FDS: f"{report_w},{reply_r}"}
        if self.armed:
            probe[ENV_ARM] = self.armed
        env = trimmed_environment(probe)
        self.stderr_path.parent.mkdir(parents=True, exist_ok=True)
        stderr = os.open(self.stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        child_ends = (stdin_r, stdout_w, stderr, report_w, reply_r)
        try:
            if self.server is not None:
                server = self.server
                self.process = await _started(lambda: ContainedProcess.fork(
                    server, self.server_argv, env=env, cwd=self.cwd, fds=child_ends,
                    script=self.script))
            else:
                self.process = await _started(lambda: ContainedProcess.start(
                    list(self.argv), cwd=self.cwd or os.getcwd(), env=env, stdin_path=stdin_r,
                    stdout_path=stdout_w, stderr_path=stderr, pass_fds=(report_w, reply_r)))
        except BaseException:
            for fd in (stdin_w, stdout_r, report_r, reply_w):
                os.close(fd)
            raise
        finally:
            # The child's ends belong to the child alone, or EOF never comes.
            for fd in child_ends:
                os.close(fd)
        self._report_fd, self._reply_fd = report_r, reply_w
        self._parked, self._exited = asyncio.Event(), asyncio.Event()
        os.set_blocking(report_r, False)
        loop = asyncio.get_running_loop()
        loop.add_reader(report_r, self._on_report)
        reader = asyncio.StreamReader(limit=_LIMIT)
        await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(stdout_r, "rb", 0)
        )
        transport, protocol = await loop.connect_write_pipe(
            lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()),
            os.fdopen(stdin_w, "wb", 0),
        )
        self._transport = transport
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
        client = cast(acp.Client, _Client())
        _quiet_sdk_tracebacks()
        self.conn = acp.connect_to_agent(client, writer, reader, observers=[self._observe])

    def _observe(self, event: StreamEvent) -> None:
        direction = "in" if event.direction is StreamDirection.INCOMING else "out"
        self.messages.append((direction, event.message))

    def _on_report(self) -> None:
        try:
            data = os.read(self._report_fd, 1 << 16)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            asyncio.get_running_loop().remove_reader(self._report_fd)
            assert self._exited is not None
            self._exited.set()
            return
        self._buffer += data
        *lines, self._buffer = self._buffer.split(b"\n")
        for line in lines:
            try:
                message = orjson.loads(line)
            except orjson.JSONDecodeError:
                message = {"invalid": line.decode("utf-8", "replace")}
            self.trace.append(message)
            if isinstance(message, dict) and message.get("parked"):
                assert self._parked is not None
                self._parked.set()

    @property
    def parked(self) -> bool:
        return self._parked is not None and self._parked.is_set()

    async def call(self, work: Awaitable[T], timeout: float) -> T:
        """Await an ACP request; raise Parked if the child parks first (the
        request stays pending: see `pending`), ChildHung on timeout."""
        assert self._parked is not None
        task: asyncio.Future[T] = asyncio.ensure_future(work)
        parked: asyncio.Future[Any] = asyncio.ensure_future(self._parked.wait())
        waited: set[asyncio.Future[Any]] = {task, parked}
        try:
            done, _ = await asyncio.wait(
                waited, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            parked.cancel()
        if task in done:
            return task.result()
        if self.parked:
            self.pending = task
            raise Parked()
        task.cancel()
        raise ChildHung(f"no answer, no boundary and no exit within {timeout:g}s")

    def reply(self, action: str, **fields: Any) -> None:
        """Answer the parked child (e.g. "continue")."""
        assert self._parked is not None
        self._parked.clear()
        with contextlib.suppress(OSError):
            os.write(self._reply_fd, orjson.dumps({"action": action, **fields}) + b"\n")

    def signal(self, signum: int) -> None:
        """Send a signal to the child's whole process group."""
        assert self.process is not None
        self.process.signal(signum)

    def kill(self) -> None:
        """SIGKILL the child's process group (its tree goes when it is reaped)."""
        if self.process is not None and self._exit is None:
            self.process.kill()

    async def wait(self, timeout: float) -> ChildExit:
        """Wait for the child's status (its supervisor, or its fork server,
        is the one reaper), then kill what is left of its tree."""
        process = self.process
        assert process is not None
        if self._exit is not None:
            return self._exit
        code = await asyncio.to_thread(process.wait, timeout)
        if code is None:
            self.kill()
            code = await asyncio.to_thread(process.wait, 5)
            await self._finish(_KILLED if code is None else code)
            raise ChildHung(f"did not exit within {timeout:g}s; killed")
        if self._exited is not None:  # the rest of the trace
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._exited.wait(), 1.0)
        return await self._finish(code)

    async def close(self, timeout: float) -> ChildExit:
        """Close the connection (the agent sees EOF on stdin) and reap it."""
        if self.conn is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.conn.close(), timeout)
        if self._transport is not None:
            with contextlib.suppress(Exception):
                self._transport.close()
        return await self.wait(timeout)

    async def _finish(self, code: int) -> ChildExit:
        """The child exited with `code`: kill whatever of its tree is left (a
        daemon it started in a session of its own too) and let go of it."""
        if self.process is not None:
            await asyncio.to_thread(self.process.close)
        try:
            stderr = self.stderr_path.read_text("utf-8", "replace")
        except OSError:
            stderr = ""
        self._exit = ChildExit(code, stderr)
        self.release()
        return self._exit

    def release(self) -> None:
        """Let go of the probe pipes (the process is closed by `wait`)."""
        if self._report_fd >= 0:
            with contextlib.suppress(Exception):
                asyncio.get_running_loop().remove_reader(self._report_fd)
        for fd in (self._report_fd, self._reply_fd):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._report_fd = self._reply_fd = -1

    async def __aenter__(self) -> AcpChild:
        if self.process is None:
            await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._exit is None and self.process is not None:
            self.kill()
            with contextlib.suppress(Exception):
                await self.wait(10)
        if self.conn is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.conn.close(), 5)
        if self.pending is not None:
            self.pending.cancel()
        if self.process is not None:  # whatever went wrong, nothing of it outlives this
            await asyncio.to_thread(self.process.close)
        self.release()


async def _started(start: Callable[[], ContainedProcess]) -> ContainedProcess:
    """`start()` run in a thread (it blocks: an exec'd supervisor reports the
    agent's pid when it has started it); cancelled meanwhile, the process
    it started is closed once it has."""
    started = asyncio.get_running_loop().run_in_executor(None, start)
    try:
        return await asyncio.shield(started)
    except asyncio.CancelledError:
        started.add_done_callback(_close_late)
        raise


def _close_late(done: asyncio.Future[ContainedProcess]) -> None:
    """Close a process whose start outlived the task that asked for it (in a
    thread of its own: the event loop may be shutting down its executor)."""
    if not done.cancelled() and done.exception() is None:
        threading.Thread(target=done.result().close, name="faultlab-acp-close").start()


_SDK_DIR = os.path.dirname(acp.__file__) + os.sep


class _SdkTracebacks(logging.Filter):
    """Drops what the ACP SDK logs with a traceback on the root logger
    (`logging.exception("Send loop failed")` when an agent exits while a
    message is being sent): the lab reports the same failure as its verdict
    (REFERENCE_FAILED, the agent's exit and stderr), and a user must never see
    a traceback for an agent that misbehaved.  Every other record passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and record.pathname.startswith(_SDK_DIR))


def _quiet_sdk_tracebacks() -> None:
    root = logging.getLogger()
    if not any(isinstance(f, _SdkTracebacks) for f in root.filters):
        root.addFilter(_SdkTracebacks())
