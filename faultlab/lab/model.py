# The lab's values: a case (scenario x kill point x fault), a violation with
# its stable code, and the verdict of a case.  Case ids are stable: the same
# scenario files and options give the same ids in the same order.
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

__all__ = ["GUARANTEES", "Case", "CaseResult", "Verdict", "Violation", "explain"]

# "unsupported": the fault cannot be run on this backend at all (the case says
# why in its detail); listed in every report, never counted as a pass.
Verdict = Literal["pass", "fail", "drift", "hung", "error", "unsupported"]

# code -> (guarantee, what it means for a person who must act on it)
GUARANTEES: dict[str, tuple[str, str]] = {
    "REQUEST_ENVELOPE_LOST": (
        "G1",
        "a request reached the model but its request/header was not durable",
    ),
    "TOOL_INTENT_LOST": ("G2", "a tool body started but its tool/call was not durable"),
    "REPAIR_MISCLASSIFIED": (
        "G3",
        "crash repair answered a call with the wrong class (or cited the wrong seq)",
    ),
    "SETTLED_STEP_LOST": ("G4", "events of a completed flush were missing after the crash"),
    "COMPLETED_TURN_LOST": ("G4", "a completed turn was missing after the crash"),
    "LOG_NOT_PREFIX": ("G5", "the recovered log is not a prefix of what was appended"),
    "SEQ_GAP": ("G5", "the recovered log skips a seq"),
    "SEQ_DUPLICATE": ("G5", "the recovered log repeats a seq"),
    "CORRUPT_COMMITTED_LOG": ("G5", "a committed line of the recovered log cannot be read"),
    "UNSAFE_RETRY_GUIDANCE": (
        "G6",
        "repair told the model a retry is safe for a tool that is not idempotent",
    ),
    "SIDE_EFFECT_DUPLICATED": ("G6", "a non-idempotent effect was applied twice after resume"),
    "PROVIDER_INVALID_HISTORY": (
        "G7",
        "the repaired history breaks the tool-call pairing rules model APIs enforce",
    ),
    "REPAIR_NOT_IDEMPOTENT": ("G8", "repairing an already repaired log changed it"),
    "DISPATCH_AFTER_FAILED_CHECKPOINT": ("G9", "work was dispatched after a failed checkpoint"),
    "DISPATCH_AFTER_CANCEL": (
        "G9",
        "a tool body started although cancellation landed during its checkpoint",
    ),
    "SEQ_FORK": ("G5", "a second writer was not refused, or the session's seqs forked"),
    "CORRUPTION_IGNORED": (
        "G5",
        "the target loaded a log with a corrupt committed line instead of refusing it",
    ),
    "FAULT_NOT_INJECTED": ("lab", "the fault was armed but never took effect in the target"),
    "GRACEFUL_CLOSE_MISSING": ("G10", "a graceful stop did not persist its closing events"),
    "ACP_REPLAY_MISMATCH": (
        "ACP",
        "session/load showed the client a conversation other than the repaired log's",
    ),
    "GUIDANCE_NOT_DELIVERED": (
        "ACP",
        "the first model request after TOOL_OUTCOME_UNKNOWN lacked the logged retry guidance",
    ),
    "CANCEL_NOT_PERSISTED": (
        "ACP",
        "after session/cancel a tool call stayed open for the client or the log lacks the "
        "real closing events",
    ),
    "BOUNDARY_NOT_REACHED": ("coverage", "a boundary the scenario declares was never reached"),
    "EXPECTATION_FAILED": ("expect", "a per-boundary expectation of the scenario did not hold"),
    "RESUME_FAILED": ("recovery", "the target could not repair or resume the crashed session"),
    "NONDETERMINISTIC": (
        "lab",
        "two runs of the same case differed (log, ledger or trace, times and ids normalised): "
        "the target depends on the clock, randomness or scheduling",
    ),
    "DRIFT": ("lab", "the crash run did not reach its kill point the way the reference did"),
    "CHILD_HUNG": ("lab", "the target neither reached its kill point nor exited in time"),
    "REFERENCE_FAILED": ("lab", "the fault-free run of the scenario did not complete"),
    "FAULT_UNSUPPORTED": (
        "lab",
        "the target does not report the write facts and flush/written boundary this fault needs",
    ),
}


def explain(code: str) -> str:
    return GUARANTEES.get(code, ("?", code))[1]


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken guarantee, with its evidence."""

    code: str
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)

    @property
    def guarantee(self) -> str:
        return GUARANTEES.get(self.code, ("?", ""))[0]

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "guarantee": self.guarantee,
            "message": self.message,
            "evidence": self.evidence,
        }


@dataclass(frozen=True, slots=True)
class Case:
    """Kill one scenario at one boundary occurrence with one fault."""

    scenario: str  # path of the scenario file
    occurrence: str  # "tool/durable#2"
    fault: str = "sigkill"

    @property
    def id(self) -> str:
        return f"{Path(self.scenario).name}::{self.occurrence}[{self.fault}]"

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "scenario": self.scenario,
            "occurrence": self.occurrence,
            "fault": self.fault,
        }


@dataclass(frozen=True, slots=True)
class CaseResult:
    """What happened to one case."""

    case: Case
    verdict: Verdict
    violations: tuple[Violation, ...] = ()
    seconds: float = 0.0
    detail: str = ""
    artifacts: dict[str, str] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    @property
    def failed(self) -> bool:
        """A verdict that fails a run (anything but pass and unsupported)."""
        return self.verdict not in ("pass", "unsupported")

    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(v.code for v in self.violations))

    def to_json(self) -> dict[str, Any]:
        return {
            **self.case.to_json(),
            "verdict": self.verdict,
            "codes": list(self.codes),
            "violations": [v.to_json() for v in self.violations],
            "seconds": round(self.seconds, 4),
            "detail": self.detail,
            "artifacts": self.artifacts,
        }
