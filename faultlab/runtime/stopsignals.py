# SIGTERM and SIGINT as requests to stop, delivered to a running event loop.
# It owns the process's handlers for those two signals and its signal wakeup
# fd while a run lasts, and puts back what was there before.
#
# Why not loop.add_signal_handler: asyncio checks the signal number against
# signal.valid_signals() on every add and every remove, and that builds the
# Signals enum member of every valid signal each time (about 0.1 ms a call
# here).  A run adds and removes two handlers: 0.4 ms of every forked child,
# about a tenth of a short child's Python work.  This does what asyncio does
# (a C-level wakeup fd, so a signal delivered to any thread wakes the loop,
# and a Python handler that only keeps the default action away) without the
# checks: the two signals are known valid.
from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
from collections.abc import Callable, Iterator
from types import FrameType

__all__ = ["STOP_SIGNALS", "stop_signals"]

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
_NAMES = {int(signum): signum.name for signum in STOP_SIGNALS}


def _ignore(_signum: int, _frame: FrameType | None) -> None:
    """The Python-level handler: the wakeup fd does the work."""


@contextlib.contextmanager
def stop_signals(loop: asyncio.AbstractEventLoop, stop: Callable[[str], object]) -> Iterator[None]:
    """While inside, SIGTERM or SIGINT calls `stop(name)` ("SIGTERM") in
    `loop`, once per signal received.  Call from the main thread (as for any
    signal handler), with `loop` running in it."""
    wake_read, wake_write = socket.socketpair()
    wake_read.setblocking(False)
    wake_write.setblocking(False)

    def woken() -> None:
        try:
            data = wake_read.recv(4096)
        except (BlockingIOError, InterruptedError):
            return
        for signum in data:
            name = _NAMES.get(signum)
            if name is not None:
                stop(name)

    loop.add_reader(wake_read.fileno(), woken)
    previous_fd = signal.set_wakeup_fd(wake_write.fileno(), warn_on_full_buffer=False)
    previous = {}
    for signum in STOP_SIGNALS:
        previous[signum] = signal.signal(signum, _ignore)
        signal.siginterrupt(signum, False)  # as asyncio does: restart interrupted calls
    try:
        yield
    finally:
        for signum, handler in previous.items():
            # None: the handler was not set from Python; the default then.
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
        signal.set_wakeup_fd(previous_fd)
        loop.remove_reader(wake_read.fileno())
        wake_read.close()
        wake_write.close()
