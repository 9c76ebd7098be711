# The lab's values for one case: a case (scenario x kill point x fault) and
# what happened to it (its verdict and violations).  Case ids are stable: the
# same scenario files and options give the same ids in the same order.
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from faultlab.lab.oracle.codes import Violation

__all__ = ["Case", "CaseResult", "Verdict"]

# "unsupported": the fault cannot be run on this backend at all (the case says
# why in its detail); listed in every report, never counted as a pass.
Verdict = Literal["pass", "fail", "drift", "hung", "error", "unsupported"]


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
