# Where in its script the scripted model is, chosen from a request's history
# alone: a black-box agent keeps its own state, so a restarted agent must be
# answered as the killed one would have been, and the same history must
# always get the same answer (docs/model-server.md, "The position rule").
from __future__ import annotations

from dataclasses import dataclass

from faultlab.lab.read.histories import History, Message, classify_result
from faultlab.scenario import Branch, Scenario, Step
from faultlab.scenario.model import BRANCH_CODES, ToolCallSpec

__all__ = ["FINAL_TEXT", "RESULT_CODES", "Answer", "choose_answer", "result_code"]

# What the model says once the script has nothing left: a turn's last step
# answered, and no later turn's user text in the history.
FINAL_TEXT = "Done."
# How a tool result's class (read/histories.py `classify_result`) maps to the
# branch codes a scenario's `when` names: a result that says the call was
# aborted claims it never dispatched; a plain error result is a failed tool.
RESULT_CODES = {
    "unknown": "TOOL_OUTCOME_UNKNOWN",
    "not-started": "TOOL_NOT_STARTED",
    "aborted": "ABORTED_BEFORE_DISPATCH",
    "error": "TOOL_FAILED",
}


@dataclass(frozen=True, slots=True)
class Answer:
    """The scripted answer to one request: step `step` of the flattened script
    (None once it is finished), its branch `branch` when one was taken."""

    step: int | None
    turn: int | None
    branch: str | None
    chunks: tuple[str, ...]
    calls: tuple[ToolCallSpec, ...] = ()
    delay_ms: int = 0
    chunk_delay_ms: int = 0

    @property
    def text(self) -> str:
        return "".join(self.chunks)

    def call_id(self, index: int, prefix: str, *, answer: int) -> str:
        """The id of call `index` in the server's answer number `answer` (the
        n of its `model/request`, counted over the whole case): fresh for
        every answer, so a step answered again after a kill never hands out
        an id the agent already holds (an id used twice would be faultlab's
        doing, not the agent's); the step and branch are kept in it for
        people reading a log."""
        branch = f"b{BRANCH_CODES.index(self.branch)}" if self.branch in BRANCH_CODES else ""
        return f"{prefix}fl{answer}s{self.step}{branch}c{index}"


def result_code(result: Message) -> str | None:
    """The branch code a tool result carries: a code named in its text, else
    its class mapped by RESULT_CODES; None for a success."""
    upper = result.text.upper()
    for code in BRANCH_CODES:
        if code in upper:
            return code
    kind = classify_result(result)
    return RESULT_CODES.get(kind) if kind else None


def _matches(message: Message, content: Step | Branch) -> bool:
    if content.tool_calls:
        sent = [(c.name, c.arguments) for c in message.calls]
        return sent == [(c.tool, dict(c.arguments)) for c in content.tool_calls]
    return (
        not message.calls
        and bool(message.text.strip())
        and (message.text.strip() == content.text.strip())
    )


def _turn_named(message: Message, scenario: Scenario) -> int | None:
    """The last turn whose user text the message contains (agents add
    reminders around the user's words)."""
    found = None
    for index, turn in enumerate(scenario.turns):
        if turn.user.strip() and turn.user.strip() in message.text:
            found = index
    return found


def _branch(step: Step, history: History) -> Branch | None:
    """The step's first branch whose code the latest batch of tool results
    (those after the last assistant message with calls) carries."""
    if not step.branches:
        return None
    last_call = max((i for i, m in enumerate(history.messages) if m.calls), default=-1)
    names = {c.id: c.name for c in history.calls()}
    latest = [m for m in history.messages[last_call + 1 :] if m.role == "tool"]
    for branch in step.branches:
        for result in latest:
            if result_code(result) == branch.when and branch.tool in (
                None, names.get(result.call_id or "")):  # fmt: skip
                return branch
    return None


def choose_answer(scenario: Scenario, history: History) -> Answer:
    """Answer the step after the last assistant message that matches a step
    (in order, main content or a branch); with none matched, the first step of
    the turn the latest user message names; past a turn's end, the next turn
    only once the history carries its user text, else FINAL_TEXT."""
    flat = [(t, step) for t, turn in enumerate(scenario.turns) for step in turn.steps]
    cursor, matched_at = 0, -1
    for position, message in enumerate(history.messages):
        if message.role != "assistant":
            continue
        for index in range(cursor, len(flat)):
            step = flat[index][1]
            if _matches(message, step) or any(_matches(message, b) for b in step.branches):
                cursor, matched_at = index + 1, position
                break
    named = None
    for message in reversed(history.messages[matched_at + 1 :]):
        if message.role == "user":
            named = _turn_named(message, scenario)
            if named is not None:
                break
    target: int | None
    if matched_at < 0:
        target = next((i for i, (t, _) in enumerate(flat) if t == (named or 0)), None)
    else:
        done_turn = flat[cursor - 1][0]
        if named is not None and named > done_turn:
            target = next((i for i, (t, _) in enumerate(flat) if t == named), None)
        elif cursor < len(flat) and flat[cursor][0] == done_turn:
            target = cursor
        else:
            target = None
    if target is None:
        return Answer(None, None, None, (FINAL_TEXT,))
    turn, step = flat[target]
    branch = _branch(step, history)
    content: Step | Branch = branch or step
    return Answer(target, turn, branch.when if branch else None, content.chunks,
                  content.tool_calls, step.delay_ms, step.chunk_delay_ms)  # fmt: skip
