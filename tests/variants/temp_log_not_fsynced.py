"""Variant: the JSONL backend creates its log from a temp file it never fsyncs.

Bug imitated: the atomic-create dance (write a temp file, link it into
place, fsync the directory) without the fsync of the temp file: the name is
made durable before the bytes it names. After a power loss right after the
creation the log can exist empty (no header). The probe reports the same
facts as the reference runtime (`create` with the header's size, `dirsync`),
so only the system calls show that the temp file was linked with 82 bytes
never fsynced.

The oracle must report: RENAME_BEFORE_FSYNC (the strace of the reference
run: a link of a file created in the run whose bytes were not fsynced).
Shows at: chat.toml flush/written#1 [power-loss].
"""

from __future__ import annotations

import os
import time

from _common import run

from faultlab.probe import PROBE
from faultlab.runtime.backends import jsonl
from faultlab.runtime.backends.base import LoadedLog
from faultlab.runtime.backends.jsonl import JsonlBackend
from faultlab.runtime.backends.jsonl_format import encode_header, read_log


def _create(self: JsonlBackend, session_id: str) -> LoadedLog:
    header = encode_header(session_id, time.time())
    temp = self.directory / f".{jsonl.LOG_NAME}.{os.getpid()}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, header)  # the bug: no os.fsync(fd) before the link
    finally:
        os.close(fd)
    try:
        os.link(temp, self.path)
    finally:
        os.unlink(temp)
    if PROBE.enabled:
        PROBE.fact("create", file=str(self.path), size=len(header))
    jsonl._fsync_dir(self.directory)
    self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
    return read_log(header, str(self.path))


JsonlBackend._create = _create  # type: ignore[method-assign]

if __name__ == "__main__":
    run()
