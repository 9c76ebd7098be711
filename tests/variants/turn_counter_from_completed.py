"""Variant: the next turn number counts completed turns only.

Bug imitated: on load the turn counter is rebuilt from the turns that
`completed` (a counter meant for "turns shown to the user"), so after a
crash whose turn repair closed as `interrupted`, the resumed session starts
a turn with the same number again: two `turn/start` for one turn, and the
request ids built from it (`req-t<turn>-s<step>`) repeat too.

The oracle must report: TURN_DUPLICATE (G5; with REQUEST_DUPLICATE).
Shows at: chat.toml model/chunk#1 (the final log has turn 0 twice).
"""

from __future__ import annotations

from _common import run

from faultlab.runtime.agent import Agent


def _next_turn_number(self: Agent) -> int:
    return sum(
        1
        for e in self.log.events
        if e.type == "turn/end" and (e.data.get("reason") or {}).get("kind") == "completed"
    )


Agent.next_turn_number = _next_turn_number  # type: ignore[method-assign]

if __name__ == "__main__":
    run()
