# Stable kill-point names when a framework runs an AI message's tool calls in
# parallel (a ToolNode's thread pool, one `tools` task per call): the
# scripted tool bodies of one message take turns in the message's call
# order, so `tool/started#2` is the second call of the message in every run,
# not whichever thread the scheduler woke first.  Framework-neutral: an app
# child tells it which calls are about to run (the model's answer, or the
# unanswered calls of the persisted state on resume) and wraps each body.
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from faultlab.lab.read.histories import Call

__all__ = ["CallOrder"]


class CallOrder:
    """The calls expected to run, in call order; a body whose call is
    expected waits until the calls before it have run.  A framework that
    runs them in another order, or leaves one out, delays the rest by at
    most `timeout` seconds, after which they go on (and `late` is told the
    call id, so the gate records that the order was not kept)."""

    def __init__(self, *, timeout: float = 5.0,
                 late: Callable[[str], None] | None = None) -> None:  # fmt: skip
        if timeout <= 0:
            raise ValueError(f"CallOrder timeout must be positive, not {timeout!r}")
        self._timeout, self._late = timeout, late
        self._waiting: list[str] = []
        self._calls: dict[str, Call] = {}
        self._changed = threading.Condition()

    def expect(self, calls: Sequence[Call]) -> None:
        """The calls about to run, in call order (replaces what was expected)."""
        with self._changed:
            self._calls = {c.id: c for c in calls}
            self._waiting = list(self._calls)
            self._changed.notify_all()

    def identify(self, name: str, arguments: dict[str, Any]) -> str | None:
        """The call a body invoked without its call id is running: the first
        expected call of tool `name` with these arguments not yet run (a
        tool node that passes only `call["args"]`, as LangGraph's own
        tutorial does)."""
        with self._changed:
            return next((c for c in self._waiting if self._calls[c].name == name
                         and self._calls[c].arguments == arguments), None)  # fmt: skip

    @contextmanager
    def turn(self, call_id: str) -> Iterator[None]:
        """Run the body of `call_id` in its turn."""
        deadline = time.monotonic() + self._timeout
        late = False
        with self._changed:
            while call_id in self._waiting and self._waiting[0] != call_id:
                left = deadline - time.monotonic()
                if left <= 0:
                    late = True
                    break
                self._changed.wait(left)
        if late and self._late is not None:
            self._late(call_id)
        try:
            yield
        finally:
            with self._changed:
                if call_id in self._waiting:
                    self._waiting.remove(call_id)
                self._changed.notify_all()
