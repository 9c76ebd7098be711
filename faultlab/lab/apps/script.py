# Where a scripted model is in its scenario, read from the history it is
# sent: the turn whose user text is the last user message, the step given by
# the assistant messages since that text was first sent.  So a resumed
# process answers exactly as the killed one would have, and a user who sends
# a message again continues the turn, as a real model reading the thread
# would.  Framework-neutral: the app children build their framework's
# answer from it.
from __future__ import annotations

from faultlab.lab.read.histories import History
from faultlab.scenario import Scenario
from faultlab.scenario.model import Step

__all__ = ["call_id", "scripted_step"]


def scripted_step(scenario: Scenario, history: History) -> tuple[int, int, Step | None]:
    """(turn, step, the step's script or None when the turn is done)."""
    users = [i for i, m in enumerate(history.messages) if m.role == "user"]
    text = history.messages[users[-1]].text if users else ""
    turn = next((i for i, t in enumerate(scenario.turns) if t.user == text), 0)
    first = next((i for i in users if history.messages[i].text == text), -1)
    step = sum(1 for m in history.messages[first + 1:] if m.role == "assistant")
    steps = scenario.turns[turn].steps
    return turn, step, steps[step] if step < len(steps) else None


def call_id(turn: int, step: int, index: int) -> str:
    """Tool call ids stable across processes: `call_TURN_STEP_INDEX`."""
    return f"call_{turn}_{step}_{index}"
