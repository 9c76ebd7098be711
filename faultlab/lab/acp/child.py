# An ACP agent as a lab child: spawned in its own process group with the two
# probe pipes and its stderr to a file (never a pipe nobody reads), driven
# through the agent-client-protocol SDK's client side (`connect_to_agent` on
# the child's stdin/stdout: the SDK's own spawn helper can neither pass the
# probe fds nor start a process group).  Every JSON-RPC message exchanged is
# recorded in order; the probe trace is read on the event loop, so a prompt
# and the child parking at its armed boundary can be awaited together.
from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

import acp
import orjson
from acp.connection import StreamDirection, StreamEvent

from faultlab.lab.acp.fork import AcpForkServer
from faultlab.lab.process.forkserver import ForkedProcess
from faultlab.lab.process.probereport import ProbeReport
from faultlab.lab.process.spawn import ChildExit, ChildHung, signal_group, trimmed_environment
from faultlab.probe import ENV_ARM, ENV_FDS

__all__ = ["AcpChild", "Parked", "kill_all_acp"]

T = TypeVar("T")
_LIMIT = 50 * 1024 * 1024  # the SDK's own default line limit

_LIVE: set[AcpChild] = set()


def kill_all_acp() -> None:
    """SIGKILL every live ACP child's process group (on interrupt of the lab)."""
    for child in list(_LIVE):
        child.kill()


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
    """One ACP agent process under the probe."""

    argv: Sequence[str]
    stderr_path: Path
    armed: str | None = None
    cwd: str | None = None
    trace: list[ProbeReport] = field(default_factory=list)
    # ("out" | "in", raw JSON-RPC message) in the order they crossed the pipe
    messages: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    conn: Any = None
    pending: asyncio.Future[Any] | None = None  # the request the child parked in
    server: AcpForkServer | None = None  # fork from this server instead of exec
    server_argv: Sequence[str] = ()  # what the server's child runs: agent arguments
    _proc: asyncio.subprocess.Process | ForkedProcess | None = None
    _transport: asyncio.BaseTransport | None = None
    _report_fd: int = -1
    _reply_fd: int = -1
    _buffer: bytes = b""
    _parked: asyncio.Event | None = None
    _exited: asyncio.Event | None = None
    _exit: ChildExit | None = None

    async def start(self) -> None:
        if self._proc is not None:
            raise RuntimeError("an AcpChild starts once")
        report_r, report_w = os.pipe()
        reply_r, reply_w = os.pipe()
        env = {ENV_FDS: f"{report_w},{reply_r}"}
        if self.armed:
            env[ENV_ARM] = self.armed
        self.stderr_path.parent.mkdir(parents=True, exist_ok=True)
        stderr = os.open(self.stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            if self.server is not None:
                reader, writer = await self._fork(trimmed_environment(env), stderr,
                                                  report_w, reply_r)  # fmt: skip
            else:
                reader, writer = await self._exec(trimmed_environment(env), stderr,
                                                  report_w, reply_r)  # fmt: skip
        finally:
            for fd in (stderr, report_w, reply_r):
                os.close(fd)
        _LIVE.add(self)
        self._report_fd, self._reply_fd = report_r, reply_w
        self._parked, self._exited = asyncio.Event(), asyncio.Event()
        os.set_blocking(report_r, False)
        asyncio.get_running_loop().add_reader(report_r, self._on_report)
        client = cast(acp.Client, _Client())
        self.conn = acp.connect_to_agent(client, writer, reader, observers=[self._observe])

    async def _exec(
        self, env: dict[str, str], stderr: int, report_w: int, reply_r: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        proc = await asyncio.create_subprocess_exec(
            *self.argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=stderr, env=env, cwd=self.cwd, pass_fds=(report_w, reply_r),
            start_new_session=True, limit=_LIMIT,
        )  # fmt: skip
        self._proc = proc
        assert proc.stdin is not None and proc.stdout is not None
        return proc.stdout, proc.stdin

    async def _fork(
        self, env: dict[str, str], stderr: int, report_w: int, reply_r: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        assert self.server is not None
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        try:
            self._proc = await asyncio.to_thread(
                self.server.spawn_agent, self.server_argv, env=env, cwd=self.cwd,
                fds=(stdin_r, stdout_w, stderr, report_w, reply_r),
            )  # fmt: skip
        except BaseException:
            for fd in (stdin_w, stdout_r):
                os.close(fd)
            raise
        finally:
            os.close(stdin_r)
            os.close(stdout_w)
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=_LIMIT)
        await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(stdout_r, "rb", 0)
        )
        transport, protocol = await loop.connect_write_pipe(
            lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()),
            os.fdopen(stdin_w, "wb", 0),
        )
        self._transport = transport
        return reader, asyncio.StreamWriter(transport, protocol, None, loop)

    @property
    def pid(self) -> int:
        assert self._proc is not None
        return self._proc.pid

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
        signal_group(self.pid, signum)

    def kill(self) -> None:
        if self._proc is not None and self._exit is None:
            self.signal(signal.SIGKILL)

    async def wait(self, timeout: float) -> ChildExit:
        """Reap the child (asyncio's watcher, or the fork server, is the one
        reaper), sweep its group."""
        assert self._proc is not None
        if self._exit is not None:
            return self._exit
        try:
            code = await self._wait_exit(timeout)
        except TimeoutError:
            self.kill()
            code = await self._wait_exit(5)
            self._finish(code)
            raise ChildHung(f"did not exit within {timeout:g}s; killed") from None
        if self._exited is not None:  # the rest of the trace
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._exited.wait(), 1.0)
        return self._finish(code)

    async def _wait_exit(self, timeout: float) -> int:
        proc = self._proc
        if isinstance(proc, ForkedProcess):
            try:
                return await asyncio.to_thread(proc.wait, timeout)
            except subprocess.TimeoutExpired:
                raise TimeoutError from None
        assert proc is not None
        return await asyncio.wait_for(proc.wait(), timeout)

    async def close(self, timeout: float) -> ChildExit:
        """Close the connection (the agent sees EOF on stdin) and reap it."""
        if self.conn is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.conn.close(), timeout)
        stdin = self._transport if self.server is not None else getattr(self._proc, "stdin", None)
        if stdin is not None:
            with contextlib.suppress(Exception):
                stdin.close()
        return await self.wait(timeout)

    def _finish(self, code: int) -> ChildExit:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)  # stragglers of its group
        try:
            stderr = self.stderr_path.read_text("utf-8", "replace")
        except OSError:
            stderr = ""
        self._exit = ChildExit(code, stderr)
        self.release()
        return self._exit

    def release(self) -> None:
        _LIVE.discard(self)
        if self._report_fd >= 0:
            with contextlib.suppress(Exception):
                asyncio.get_running_loop().remove_reader(self._report_fd)
        for fd in (self._report_fd, self._reply_fd):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._report_fd = self._reply_fd = -1

    async def __aenter__(self) -> AcpChild:
        if self._proc is None:
            await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._exit is None and self._proc is not None:
            self.kill()
            with contextlib.suppress(Exception):
                await self.wait(10)
        if self.conn is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.conn.close(), 5)
        if self.pending is not None:
            self.pending.cancel()
        self.release()
