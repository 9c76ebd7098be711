# Where a scripted model is in its scenario, read from the history it is
# sent: the turn whose user text is the last user message, the step given by
# the assistant messages since that text was first sent.  So a resumed
# process answers exactly as the killed one would have, and a user who sends
# a message again continues the turn, as a real model reading the thread
# would.  Framework-neutral: the app children build their framework's
# answer from it.
from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from faultlab.lab.read.histories import History
from faultlab.lab.servers.gate import GateClient
from faultlab.lab.servers.ledger import LedgerWriter
from faultlab.scenario import Scenario
from faultlab.scenario.model import Step, ToolSpec

__all__ = ["argument_names", "call_id", "child_arguments", "run_tool_body", "scripted_step"]


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


def argument_names(spec: ToolSpec, scenario: Scenario) -> list[str]:
    """Every argument name the scenario's calls of the tool use (its schema)."""
    return sorted({k for t in scenario.turns for s in t.steps for c in s.tool_calls
                   if c.tool == spec.name for k in c.arguments})  # fmt: skip


def run_tool_body(spec: ToolSpec, gate: GateClient, ledger: LedgerWriter, call: str,
                  arguments: dict[str, Any]) -> tuple[bool, str]:  # fmt: skip
    """A scripted tool's body, whatever framework calls it: the boundaries
    around its effect (an fsynced ledger line for `effect = "ledger"`),
    then (failed, result text)."""
    gate.reach("tool/started", callId=call, tool=spec.name)
    if spec.asks_retry(arguments):  # rejected before its effect (`retry_if`)
        gate.reach("tool/returned", callId=call, tool=spec.name, rejected=True)
        return True, spec.retry_message
    if spec.effect == "ledger":
        key = call if spec.accepts_idempotency_key else None
        ledger.apply(call_id=call, tool=spec.name, arguments=arguments, key=key)
        gate.reach("tool/effect", callId=call, tool=spec.name)
    gate.reach("tool/returned", callId=call, tool=spec.name)
    if spec.fails:
        return True, spec.result or f"{spec.name} failed"
    return False, spec.result or "ok"


def child_arguments(prog: str, argv: Sequence[str] | None, *, modes: Sequence[str],
                    actions: Sequence[str], store: str) -> argparse.Namespace:  # fmt: skip
    """The command line every app child takes from the drive
    (faultlab/lab/apps/drive.py `AppRig.start`): `--durability` is the slot of
    the framework's mode (LangGraph's durability, a pydantic-ai store's save
    policy), `--db` the path of the app's store."""
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("scenario")
    parser.add_argument("--app", required=True, help="MODULE:FACTORY")
    parser.add_argument("--db", required=True, help=store)
    parser.add_argument("--ledger", required=True)
    parser.add_argument("--gate", default=None)
    parser.add_argument("--durability", choices=modes, default=modes[0])
    parser.add_argument("--action", choices=("run", *actions), default="run")
    parser.add_argument("--from-turn", type=int, default=0)
    parser.add_argument("--fail", default=None, help="a store write to fail, BOUNDARY#N")
    parser.add_argument("--out", default=None, help="where the `read` action writes its reading")
    return parser.parse_args(argv)
