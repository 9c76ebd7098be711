"""Variant: the semantic policy forgets the request checkpoint.

Bug imitated: the `llm/stream` middleware that flushes after `request/header`
was dropped (say, lost in a refactor of the plugin list), so the model is
called while the request header and everything before it exist only in memory.
A crash while the model streams loses the record of a request that really
reached the provider (and was billed).

The oracle must report: REQUEST_ENVELOPE_LOST (G1).
Shows at: chat.toml model/chunk#1 (not at request/durable#1: parked there, the child
is killed before it calls the model).
"""

from __future__ import annotations

from _common import edit_semantic_policy, run

from faultlab.runtime.host import LLM_STREAM

edit_semantic_policy(lambda _coordinator: {LLM_STREAM: lambda _checkpoint: None})

if __name__ == "__main__":
    run()
