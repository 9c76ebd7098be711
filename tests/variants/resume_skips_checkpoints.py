"""Variant: the checkpoints are skipped when the session is resumed.

Bug imitated: the runtime installs the semantic policy's request and tool
checkpoints only for a fresh session ("a resumed session was already
checkpointed when it crashed"), so a --resume run calls the model and runs
tool bodies with their `request/header` and `tool/call` only in memory (the
post-step and turn-end flushes are still there, so a resume that runs to its
end leaves a complete log). Every single crash is survived: the fresh run is
checkpointed, and the resume after it is never crashed. A crash *during* the
resume loses the record of a request that reached the model and of a charge
that was applied; the next resume charges the card again.

The oracle must report: TOOL_INTENT_LOST (G2), and with it REQUEST_ENVELOPE_LOST
(G1) and SIDE_EFFECT_DUPLICATED (G6).
Shows at: payment.toml request/durable#1+tool/effect#1 [double-sigkill]: killed
before the first model reply, repaired, resumed and killed inside the resumed
charge_card body.  No single-crash case of payment.toml catches it.
"""

from __future__ import annotations

import sys

from _common import edit_semantic_policy, run

from faultlab.runtime.host import LLM_STREAM, TOOLS_EXECUTE

_DROPPED = {LLM_STREAM: lambda _checkpoint: None, TOOLS_EXECUTE: lambda _checkpoint: None}

if "--resume" in sys.argv[1:]:
    edit_semantic_policy(lambda _coordinator: _DROPPED)

if __name__ == "__main__":
    run()
