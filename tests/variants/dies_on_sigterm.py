"""Variant: SIGTERM ends the process at once, without closing the turn.

Bug imitated: a runtime that installs no signal handler (or one that calls
exit() straight away): a graceful stop by the user or the supervisor leaves
an open turn behind, as if it had crashed.

The oracle must report: GRACEFUL_CLOSE_MISSING (G10).
Shows at: payment.toml model/chunk#1 under the sigterm fault.
"""

from __future__ import annotations

import os

from _common import run

from faultlab.runtime.app import SessionRunner


def _exit_now(self: SessionRunner, reason: str = "") -> None:
    os._exit(0)


SessionRunner.request_stop = _exit_now  # type: ignore[method-assign]

if __name__ == "__main__":
    run()
