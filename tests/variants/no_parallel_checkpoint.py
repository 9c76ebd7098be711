"""Variant: parallel-safe tool calls skip the tool checkpoint.

Bug imitated: an optimisation of the parallel path. The dispatcher runs the
bodies of parallel-safe calls (reads, fetches) directly, around the
`tools/execute` middleware chain, because "a read cannot hurt" and a flush
per call made fan-out slow. The tool checkpoint is a `tools/execute`
middleware, so those bodies start while their `tool/call` is only in
memory; the post-step checkpoint writes it later. A crash in between loses
the record of calls that really ran (a read can still be billed, rate
limited, or leak data).

The oracle must report: TOOL_INTENT_LOST (G2).
Shows at: parallel-reads.toml tool/durable#2 (the body of call-t0-s0-0 has
started, nothing of the step's calls is durable); mixed-parallel.toml
tool/durable#2 likewise (the exclusive write still checkpoints).
"""

from __future__ import annotations

from typing import Any

from _common import run

from faultlab.runtime.calls import ToolCall
from faultlab.runtime.dispatch import ToolDispatcher
from faultlab.runtime.host import TOOLS_EXECUTE, Host, Next
from faultlab.runtime.tools import ScriptedTools


class _ParallelFastPath:
    """The dispatcher's view of the host: parallel-safe top-level calls bypass the chain."""

    def __init__(self, host: Host, tools: ScriptedTools) -> None:
        self._host = host
        self._tools = tools

    async def call(self, hook: str, context: Any, terminal: Next) -> Any:
        if hook == TOOLS_EXECUTE and isinstance(context, ToolCall) and not context.nested:
            spec = self._tools.spec(context.name)
            if spec is not None and spec.parallel_safe:
                return await terminal(context)  # the bug: no middleware, no checkpoint
        return await self._host.call(hook, context, terminal)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._host, name)


_reference_init = ToolDispatcher.__init__


def _init(self: ToolDispatcher, *, host: Host, tools: ScriptedTools, **rest: Any) -> None:
    _reference_init(self, host=_ParallelFastPath(host, tools), tools=tools, **rest)  # type: ignore[arg-type]


ToolDispatcher.__init__ = _init  # type: ignore[method-assign]

if __name__ == "__main__":
    run()
