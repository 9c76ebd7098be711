"""ACP variant: session/load replays the history without crash repair's
synthetic tool results.

Bug imitated: the replay skips events marked `synthetic` (say, because it
treats them as bookkeeping rather than conversation), so after a crash the
client is shown tool calls that never got an answer, and never sees the
TOOL_OUTCOME_UNKNOWN / TOOL_NOT_STARTED codes and their guidance.  The log
and what the model is sent are untouched.

The oracle must report: ACP_REPLAY_MISMATCH (with --drive acp).
Shows at: deploy-careful.toml tool/effect#1 [sigkill].
"""

from __future__ import annotations

from collections.abc import Iterable

from _common import run_acp

from faultlab.runtime.acp import session, updates
from faultlab.runtime.events import Event

_reference = updates.replay_updates


def without_synthetic(events: Iterable[Event], read_only: updates.ReadOnly) -> list[updates.Update]:
    return _reference([e for e in events if not e.data.get("synthetic")], read_only)


session.replay_updates = without_synthetic  # type: ignore[assignment]

if __name__ == "__main__":
    run_acp()
