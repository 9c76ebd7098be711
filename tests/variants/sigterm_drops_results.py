"""Variant: a graceful stop closes the turn but drops the results of calls in flight.

Bug imitated: on SIGTERM the runtime cancels the turn and writes its
`turn/end {cancelled}`, but a tool result that arrives once the token is
cancelled is thrown away ("the turn is over anyway"). The log looks closed,
so crash repair has nothing to do, yet a call the model asked for is never
answered: the next request is rejected by a model API (a tool-use id
without its result), and whether the effect happened is recorded nowhere.

The oracle must report: GRACEFUL_CLOSE_MISSING (G10: the closed log leaves a
call unanswered).
Shows at: payment.toml tool/durable#1 under the sigterm fault.
"""

from __future__ import annotations

from typing import Any

from _common import run

from faultlab.runtime.dispatch import ToolDispatcher

_reference = ToolDispatcher._record_result


async def _record_result(self: ToolDispatcher, *args: Any) -> None:
    if self._cancel.is_cancelled():
        return  # the bug: the result of a cancelled turn is not logged
    await _reference(self, *args)


ToolDispatcher._record_result = _record_result  # type: ignore[method-assign]

if __name__ == "__main__":
    run()
