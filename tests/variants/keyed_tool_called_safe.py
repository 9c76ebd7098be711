"""Variant: retry guidance calls every tool that takes an idempotency key safe.

Bug imitated: the repair's retry class treats "accepts an idempotency key"
as "idempotent" (`safe = read_only or idempotent or accepts_key`). The key
the runtime passes is the call id, so it only stops the *same* call from
applying twice; the model's retry is a new call with a new id and a new
key, and a non-idempotent tool (a payment) applies again. The synthetic
TOOL_OUTCOME_UNKNOWN result of such a call then tells the model a retry is
safe (retry class "safe").

The oracle must report: UNSAFE_RETRY_GUIDANCE (G6).
Shows at: annotations.toml tool/durable#5 (`keyed_transfer`: not read-only,
not idempotent, accepts an idempotency key), then resume.
"""

from __future__ import annotations

from dataclasses import dataclass

from _common import run

from faultlab.runtime.tools import ScriptedTools
from faultlab.scenario import ToolSpec


@dataclass(frozen=True, slots=True)
class _KeyTrustingSpec:
    spec: ToolSpec

    @property
    def parallel_safe(self) -> bool:
        return self.spec.parallel_safe

    @property
    def safe_to_retry(self) -> bool:
        # The bug: a key is taken for idempotence.
        return self.spec.safe_to_retry or self.spec.accepts_idempotency_key


_reference_spec = ScriptedTools.spec


def _spec(self: ScriptedTools, name: str) -> _KeyTrustingSpec | None:
    spec = _reference_spec(self, name)
    return None if spec is None else _KeyTrustingSpec(spec)


ScriptedTools.spec = _spec  # type: ignore[assignment,method-assign]

if __name__ == "__main__":
    run()
