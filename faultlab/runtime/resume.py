# Where a session continues in its script: which scripted turn and step come
# next, and with which user message, computed from the (repaired) log alone.
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from faultlab.runtime.events import ASSISTANT_MESSAGE, TURN_END, TURN_START, Event
from faultlab.runtime.history import tool_calls_of
from faultlab.scenario import Scenario

__all__ = ["Cursor", "next_cursor"]


@dataclass(frozen=True, slots=True)
class Cursor:
    """The next scripted position and the user message that opens its turn."""

    script_turn: int
    script_step: int
    user_text: str
    continuation: bool


def next_cursor(events: Sequence[Event], scenario: Scenario) -> Cursor | None:
    """The next position to run, or None when the script is finished."""
    start = None
    for index in range(len(events) - 1, -1, -1):
        if events[index].type == TURN_START:
            start = index
            break
    if start is None:
        return _fresh_turn(scenario, 0)
    opened = events[start].data
    script_turn = int(opened.get("scriptTurn", 0))
    script_step = int(opened.get("scriptStep", 0))
    answers = [e for e in events[start:] if e.type == ASSISTANT_MESSAGE]
    ended = [e for e in events[start:] if e.type == TURN_END]
    completed = bool(ended) and ended[-1].data["reason"]["kind"] == "completed"
    if completed or (answers and not tool_calls_of(answers[-1].data["message"])):
        # The model gave its final answer for that scripted turn.
        return _fresh_turn(scenario, script_turn + 1)
    step = script_step + len(answers)
    if step >= len(scenario.turns[script_turn].steps):
        return _fresh_turn(scenario, script_turn + 1)
    return Cursor(script_turn, step, scenario.resume_prompt, continuation=True)


def _fresh_turn(scenario: Scenario, script_turn: int) -> Cursor | None:
    if script_turn >= len(scenario.turns):
        return None
    return Cursor(script_turn, 0, scenario.turns[script_turn].user, continuation=False)
