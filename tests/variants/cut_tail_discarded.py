"""Variant: the JSONL backend truncates a torn tail without keeping it.

Bug imitated: on open, the writer cuts the torn last line (or damage after
the last completed turn) off the log with a bare `ftruncate`, as many
loaders do. The log it goes on with is valid, so every recovery check
passes, but the bytes that were on disk are gone: nobody can look at what
the crash left, and a cut that was wrong (a reader bug) cannot be undone.
docs/log-format.md 7.3 promises a `session.jsonl.cut-<offset>` file.

The oracle must report: CUT_TAIL_LOST (G5).
Shows at: payment.toml flush/written#3 under torn-write (the recovered state
ends in a torn line). SIGKILL never tears the reference's log: each batch is
one write.
"""

from __future__ import annotations

import os

from _common import run

from faultlab.runtime.backends.jsonl import JsonlBackend


def _cut_tail(self: JsonlBackend, valid_size: int) -> None:
    os.ftruncate(self._fd, valid_size)  # the bug: nothing kept
    os.fsync(self._fd)


JsonlBackend._cut_tail = _cut_tail  # type: ignore[method-assign]

if __name__ == "__main__":
    run()
