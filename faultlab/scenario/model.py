# Scenario files -> validated, frozen Scenario objects.
#
# This module owns the public value types of a scenario and its error.  The
# TOML parsing and validation live in `faultlab.scenario.parse`; every error it
# raises is a `ScenarioError` naming the file, the line (where it can be found)
# and the field.
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "BACKENDS",
    "BRANCH_CODES",
    "EFFECTS",
    "FORMAT_VERSION",
    "POLICIES",
    "Branch",
    "Expectation",
    "NestedCall",
    "Scenario",
    "ScenarioError",
    "Step",
    "ToolCallSpec",
    "ToolSpec",
    "Turn",
]

FORMAT_VERSION = 1
POLICIES = ("semantic", "turn-only", "every-event")
BACKENDS = ("jsonl", "sqlite")
EFFECTS = ("none", "ledger")
# Error codes a branch may wait for in the latest batch of tool results.
BRANCH_CODES = (
    "TOOL_OUTCOME_UNKNOWN",
    "TOOL_NOT_STARTED",
    "ABORTED_BEFORE_DISPATCH",
    "CHECKPOINT_FAILED",
    "TOOL_FAILED",
)

Policy = Literal["semantic", "turn-only", "every-event"]
Effect = Literal["none", "ledger"]


class ScenarioError(ValueError):
    """A scenario file is malformed.  The message names file, line and field."""

    def __init__(self, path: str, field_path: str, problem: str, line: int | None = None) -> None:
        self.path = path
        self.field_path = field_path
        self.problem = problem
        self.line = line
        where = f"{path}:{line}" if line is not None else path
        what = f"{field_path}: " if field_path else ""
        super().__init__(f"{where}: {what}{problem}")


@dataclass(frozen=True, slots=True)
class ToolCallSpec:
    """One tool call the scripted model makes in a step."""

    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Branch:
    """Alternative content of a step, taken when the latest batch of tool
    results in the history carries the error code `when` (for tool `tool`
    when given)."""

    when: str
    tool: str | None
    chunks: tuple[str, ...]
    tool_calls: tuple[ToolCallSpec, ...]

    @property
    def text(self) -> str:
        return "".join(self.chunks)


@dataclass(frozen=True, slots=True)
class Step:
    """One scripted model response: streamed text, then tool calls."""

    chunks: tuple[str, ...]
    tool_calls: tuple[ToolCallSpec, ...] = ()
    delay_ms: int = 0
    chunk_delay_ms: int = 0
    branches: tuple[Branch, ...] = ()

    @property
    def text(self) -> str:
        return "".join(self.chunks)


@dataclass(frozen=True, slots=True)
class Turn:
    """A user message and the model steps that answer it."""

    user: str
    steps: tuple[Step, ...]


@dataclass(frozen=True, slots=True)
class NestedCall:
    """A tool call a tool body makes to another tool."""

    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A scripted tool and its annotations."""

    name: str
    read_only: bool = False
    idempotent: bool = False
    parallel_safe: bool = False
    accepts_idempotency_key: bool = False
    effect: Effect = "none"
    latency_ms: int = 0
    result: str = ""
    fails: bool = False
    observes: str | None = None
    calls: tuple[NestedCall, ...] = ()
    # Another tool: the body's latency ends early, as soon as a body of that
    # tool has returned in the same run (`latency_ms` stays the longest it
    # waits).  Orders two bodies by an event instead of two timers; a runtime
    # that ignores it waits the whole latency, with the same results.
    returns_after: str | None = None
    # The same, ending as soon as a body of that tool has started.
    returns_after_start: str | None = None
    # Arguments a call must include (all of them, equal) to be rejected:
    # the body asks the model to call again instead of running (pydantic-ai:
    # `ModelRetry`; elsewhere an error result, code TOOL_FAILED).
    retry_if: dict[str, Any] | None = None

    def asks_retry(self, arguments: Mapping[str, Any]) -> bool:
        """This call is rejected before the body's effect, with a request to
        call again (`retry_if`)."""
        wanted = self.retry_if
        return wanted is not None and all(
            key in arguments and arguments[key] == value for key, value in wanted.items()
        )

    @property
    def retry_message(self) -> str:
        """What a rejected call tells the model, whichever target runs it."""
        return f"{self.result or 'rejected'}: call {self.name} again with other arguments"

    @property
    def safe_to_retry(self) -> bool:
        """Retrying after an unknown outcome cannot apply the effect twice."""
        return self.read_only or self.idempotent


@dataclass(frozen=True, slots=True)
class Expectation:
    """What a scenario states must hold when killed at one boundary occurrence."""

    at: str
    fault: str = "sigkill"
    repair: tuple[str, ...] | None = None
    ledger: dict[str, int] | None = None
    # The checkpoint policies it holds under (None: the scenario's own policy
    # only): what a crash leaves behind depends on when the runtime flushed.
    policies: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class Scenario:
    """A validated scenario.  Build one with `load_scenario` or `parse_scenario`."""

    name: str
    description: str
    path: str
    turns: tuple[Turn, ...]
    tools: tuple[ToolSpec, ...]
    policy: Policy = "semantic"
    backend: str = "jsonl"
    max_parallel_tools: int = 4
    resume_prompt: str = "Continue."
    boundaries: tuple[str, ...] = ()
    expectations: tuple[Expectation, ...] = ()

    def tool(self, name: str) -> ToolSpec:
        for spec in self.tools:
            if spec.name == name:
                return spec
        raise KeyError(name)

    @property
    def tool_names(self) -> tuple[str, ...]:
        return tuple(spec.name for spec in self.tools)
