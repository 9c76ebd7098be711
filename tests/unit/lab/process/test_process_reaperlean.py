# The per-case supervisor starts lean (faultlab/lab/process/reaper.py, run
# as `python -I -S reaper.py` once per exec'd child): it imports neither
# ctypes nor signal.py nor socket (about 28 ms of a start between them,
# benchmarks/README.md), and calls libc through _ctypes instead, with errno
# recovered through ctypes only when a call failed.
from __future__ import annotations

import os
import subprocess
import sys

from faultlab.lab.process.reaperkill import _libc, _libc_errno
from faultlab.lab.process.supervisor import REAPER


def test_the_supervisor_script_imports_only_what_it_needs() -> None:
    done = subprocess.run([sys.executable, "-I", "-S", "-X", "importtime", str(REAPER)],
                          capture_output=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 2  # its usage line: it ran its imports, then stopped
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.decode().splitlines()
                if line.startswith("import time:")}  # fmt: skip
    assert {"reaperkill", "reaperspawn", "procscan", "_signal"} <= imported
    assert not imported & {"ctypes", "signal", "socket", "enum", "typing"}


def test_libc_is_called_without_ctypes_and_says_why_a_call_failed() -> None:
    assert _libc("getpid") == os.getpid()
    assert _libc("prctl", 9999, 0, 0, 0, 0) == -1  # no such option
    assert _libc_errno("prctl", 9999, 0, 0, 0, 0) == os.strerror(22)  # EINVAL
