"""Variant: a resumed session reports fsyncs it never made.

Bug imitated: the backend opened for recovery (`--resume`) comes up in a
"fast reopen" mode that skips `os.fsync` ("the log was durable when we
loaded it"), while the probe's `fsync` fact and the coordinator's "flush
ok" stay. A fresh run fsyncs as it should, so the fault-free run's system
calls agree with its facts, and under the target's own facts every
recovery looks durable. The recovery children's system calls show no fsync
of the log: a power loss during the recovery loses the repair and
everything the resumed session said was durable.

The oracle must report: FSYNC_NOT_MADE (a recovery child's reported fsync
checked against its system calls), with REPAIR_LOST and the resumed
child's losses (REQUEST_ENVELOPE_LOST, ...).
Shows at: payment.toml flush/written#2 under power-loss (system-call ground
truth: the recovery children of a `--target` are traced).
"""

from __future__ import annotations

import sys

from _common import run
from reports_unmade_fsync import sync  # no os.fsync, the `fsync` fact all the same

from faultlab.runtime.backends.jsonl import JsonlBackend

if "--resume" in sys.argv[1:]:  # the bug: only a resumed session's backend
    JsonlBackend.sync = sync  # type: ignore[method-assign]

if __name__ == "__main__":
    run()
