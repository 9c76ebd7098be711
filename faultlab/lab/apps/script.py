# Where a scripted model is in its scenario, read from the history it is
# sent: the turn whose user text is the last user message, the step given by
# the assistant messages since that text was first sent.  So a resumed
# process answers exactly as the killed one would have, and a user who sends
# a message again continues the turn, as a real model reading the thread
# would.  Framework-neutral: the app children build their framework's
# answer from it.
from __future__ import annotations

import argparse
import errno
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import orjson

from faultlab.lab.read.histories import History, pairing_problems
from faultlab.lab.servers.gate import GateClient
from faultlab.lab.servers.ledger import LedgerWriter
from faultlab.scenario import Scenario, load_scenario
from faultlab.scenario.model import Step, ToolSpec

__all__ = [
    "ChildCase",
    "StoreWrites",
    "argument_names",
    "call_id",
    "child_arguments",
    "reading",
    "reading_error",
    "request_problem",
    "run_tool_body",
    "scripted_step",
]  # fmt: skip


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


def request_problem(gate: GateClient, history: History) -> str | None:
    """A scripted model's request reported (`model/request`), and what a
    model API would reject in it (a call unanswered before the next
    message), noted as `model/rejected`; None when it is valid."""
    gate.reach("model/request", digest=history.digest(), count=len(history.messages))
    problems = pairing_problems(history)
    if not problems:
        return None
    gate.note("model/rejected", problems=problems)
    return f"invalid request: {problems[0]}"


@dataclass(frozen=True, slots=True)
class ChildCase:
    """What every app child of a case opens: the scenario, the gate, the
    world ledger, the app's optional `before_resume` (noted on the gate:
    the lab plans the `hook` resume style only then)."""

    scenario: Scenario
    gate: GateClient
    ledger: LedgerWriter
    before_resume: Any

    @classmethod
    def open(cls, args: argparse.Namespace, module: ModuleType) -> ChildCase:
        gate = GateClient(args.gate)
        before_resume = getattr(module, "before_resume", None)
        if before_resume is not None:
            gate.note("app/hook")
        return cls(load_scenario(args.scenario), gate, LedgerWriter(args.ledger), before_resume)


class StoreWrites:
    """The boundaries of an app store's writes, whatever the framework (a
    pydantic-ai app's `save_history`, an Agents SDK session's `add_items`):
    `history/save` before the app's write, with the calls the written
    messages ask and answer, `history/save-done` after it; the armed write
    (`--fail history/save#N`) fails with EIO before the app's write runs."""

    def __init__(self, gate: GateClient, fail: str | None) -> None:
        self.gate, self.fail = gate, fail
        self.writes = 0

    def before(self, history: History, count: int) -> dict[str, Any]:
        detail = {"asked": [c.id for c in history.calls()], "answered": list(history.results()),
                  "count": count}  # fmt: skip
        self.writes += 1
        self.gate.reach("history/save", **detail)
        if self.fail == f"history/save#{self.writes}":
            self.gate.note("app/ioerror", at=self.fail)
            raise OSError(errno.EIO, "faultlab: injected I/O error")
        return detail

    def after(self, detail: dict[str, Any]) -> None:
        self.gate.reach("history/save-done", **detail)


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


def reading(count: int, history: History) -> bytes:
    """A `read` action's answer (faultlab/lab/apps/storeread.py reads it): how
    many items the app's own store held, and them as the lab's History."""
    return orjson.dumps({"count": count, "history": history.to_json()})


def reading_error(error: Exception) -> bytes:
    """A `read` action's answer when the app's own loader raised: the store's
    error, the verdict's evidence (STORE_UNREADABLE, never an empty store)."""
    return orjson.dumps({"error": f"{type(error).__name__}: {error}"[:2000]})
