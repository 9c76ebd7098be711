"""Variant: a torn tail is cut before its bytes are kept, and the kept copy is
never fsynced.

Bug imitated: on open, the JSONL writer truncates the torn tail off the log
(and fsyncs the log) first, then copies the bytes it read into the cut file
with a plain write: no fsync of the cut file, no fsync of its directory. It
reports the same facts and boundaries as the reference (`tail/cut` after the
truncation, `tail/kept` after the copy, the `cut` and `fsync` facts of the
log), and the cut file is on disk when the lab looks after the repair, so
every check of what the repair left passes. A power loss after the
truncation (before the copy, or any time before the page cache is written
back) loses the bytes from both places.

The oracle must report: CUT_TAIL_LOST (G5).
Shows at: payment.toml flush/written#3 under torn-write (system-call ground
truth): the recovered state ends in a torn line; in the repair child's
states from `tail/cut` on, the durable log is cut and the cut file is not
durable.
"""

from __future__ import annotations

import os

from _common import run

from faultlab.probe import PROBE
from faultlab.runtime.backends.jsonl import JsonlBackend


def _cut_tail(self: JsonlBackend, valid_size: int) -> None:
    with open(self.path, "rb") as source:
        source.seek(valid_size)
        cut = source.read()
    keep = self.directory / f"{self.path.name}.cut-{valid_size}"
    os.ftruncate(self._fd, valid_size)  # the bug: cut first ...
    os.fsync(self._fd)
    if PROBE.enabled:
        PROBE.fact("cut", file=str(self.path), size=valid_size, keptIn=str(keep))
        PROBE.fact("fsync", file=str(self.path), size=valid_size)
        PROBE.reach("tail/cut", file=str(self.path), size=valid_size)
    fd, keep = self._new_cut_file(valid_size)
    try:
        os.write(fd, cut)  # ... then keep, without fsync (nor of the directory)
    finally:
        os.close(fd)
    if PROBE.enabled:
        PROBE.reach("tail/kept", file=str(self.path), offset=valid_size, bytes=len(cut),
                    keptIn=str(keep))  # fmt: skip


JsonlBackend._cut_tail = _cut_tail  # type: ignore[method-assign]

if __name__ == "__main__":
    run()
