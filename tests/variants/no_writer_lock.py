"""Variant: the JSONL backend takes no writer lock.

Bug imitated: two processes resume the same session (a supervisor restart
while the old worker is still alive, two editor windows) and both append:
seqs fork, and each writer's view of the conversation is wrong.

The oracle must report: SEQ_FORK.
Shows at: payment.toml tool/durable#1 under the second-writer fault.
"""

from __future__ import annotations

from _common import run

from faultlab.runtime.backends.jsonl import JsonlBackend


def _no_lock(self: JsonlBackend) -> None:
    return None


JsonlBackend._lock = _no_lock  # type: ignore[method-assign]

if __name__ == "__main__":
    run()
