"""ACP variant: the model is never sent crash repair's retry guidance.

Bug imitated: the history builder "compacts" error tool results into a bare
error marker (code kept, text dropped) before each model request, so after a
crash the model learns that an outcome is unknown but not that it must not
retry blindly.  The log and the client's replay are untouched.

The oracle must report: GUIDANCE_NOT_DELIVERED (with --drive acp).
Shows at: deploy-careful.toml tool/effect#1 [sigkill].
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from _common import run_acp

from faultlab.runtime import agent
from faultlab.runtime.events import Event

_reference = agent.build_messages


def compacted(events: Iterable[Event]) -> list[dict[str, Any]]:
    messages = _reference(events)
    for message in messages:
        if message["role"] != "tool":
            continue
        for block in message["content"]:
            if block.get("error"):
                block["content"] = "Tool error."
                block["error"] = {"code": block["error"].get("code")}
    return messages


agent.build_messages = compacted  # type: ignore[assignment]

if __name__ == "__main__":
    run_acp()
