"""Variant: repair guidance always says a retry is safe.

Bug imitated: the guidance ignores the tool's annotations (e.g. it looks up
`idempotent` on the wrong object and defaults to True), so the synthetic
TOOL_OUTCOME_UNKNOWN result of a non-idempotent call (a payment, a deploy)
tells the model "it is safe to call it again" with retry class "safe".

The oracle must report: UNSAFE_RETRY_GUIDANCE (G6).
Shows at: payment.toml tool/durable#1 then resume (charge_card repaired with
retry "safe").
"""

from __future__ import annotations

from _common import run

from faultlab.runtime import repair

_reference = repair.guidance


def always_safe(code: str, name: str, call_id: str, _safe: bool | None) -> tuple[str, str]:
    return _reference(code, name, call_id, True)


repair.guidance = always_safe

if __name__ == "__main__":
    run()
