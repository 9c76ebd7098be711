"""Variant: the semantic policy has no post-step checkpoint.

Bug imitated: the flush after `step/end` was dropped as "redundant" (the next
request checkpoint writes the step anyway), but the loop still reports the
step settled (`step/durable`: the post-step listeners ran) and goes on, e.g.
acknowledging the step's tool results to a client. A crash before the next
checkpoint loses a step the runtime said was done; no flush fact claimed it,
so only the `step/durable` claim shows it.

The oracle must report: SETTLED_STEP_LOST (G4: the child went past
`step/durable` of step 0, and its `step/end` is not in the crashed log).
Shows at: payment.toml request/logged#2 (after the first step, before the
second step's request checkpoint).
"""

from __future__ import annotations

from _common import edit_semantic_policy, run

edit_semantic_policy(lambda _coordinator: {"agent/post-step": lambda _listener: None})

if __name__ == "__main__":
    run()
