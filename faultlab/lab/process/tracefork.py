# The reference run's system-call trace taken from a forked child: the fork
# server hands the run to a child that waits, once it holds what an exec'd
# runtime holds at its start, for the signal the lab sends once its tracer
# holds it (faultlab.forking.child.wait_for_tracer); the lab attaches strace
# to it (`strace -p`) and sends that signal.  An interpreter exec'd under
# strace costs its start-up under the tracer (hundreds of traced opens,
# mmaps and closes of the imports: about 0.6 s of CPU a run here, against a
# few ms for a fork); the forked child makes only the runtime's own calls,
# so the file facts are the same (tests/integration/test_traced_fork.py
# compares the two).  The child is contained as every forked child is (the
# init of a PID namespace of its own where allowed): strace attaches from
# the lab's namespace, with the pid the lab sees.  Where strace cannot
# attach (ptrace restricted to descendants, say), `attach` says why and the
# caller runs the exec'd trace instead.
from __future__ import annotations

import contextlib
import os
import subprocess
import time
from pathlib import Path

from faultlab.forking.child import TRACER_SIGNAL, WAITING_NAME
from faultlab.lab.process.syscalls import attach_argv

__all__ = ["ATTACH_WITHIN", "CANNOT_ATTACH", "Tracer", "attach"]

ATTACH_WITHIN = 30.0  # seconds for the child to wait and strace to hold it
_POLL = 0.001  # seconds between looks at the child's /proc status
CANNOT_ATTACH = "strace could not attach"  # how `attach` says strace itself refused


def _status(pid: int) -> dict[str, str]:
    """The fields of /proc/PID/status ({} once the process is gone or a zombie)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text("ascii", errors="replace")
    except OSError:
        return {}
    fields = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return {} if fields.get("State", "").startswith(("Z", "X")) else fields


class Tracer:
    """strace attached to one forked child, writing to `output`."""

    def __init__(self, process: subprocess.Popen[bytes], output: Path, stderr: Path) -> None:
        self.process, self.output, self.stderr = process, output, stderr

    def finish(self, timeout: float) -> str:
        """Wait for strace to write its last line and exit (it does once
        every traced process is gone); '' or why its trace is incomplete."""
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return f"strace did not exit within {timeout:g}s of the traced run's end"
        if code != 0:
            return f"strace exited {code}: {self._last_words()}"
        return ""

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        self.process.wait()

    def _last_words(self) -> str:
        lines = self.stderr.read_text("utf-8", "replace").strip().splitlines()
        return lines[-1] if lines else "no message"


def attach(pid: int, output: Path, strace: str, *, within: float = ATTACH_WITHIN) -> Tracer | str:
    """Attach strace to the forked child `pid`, which waits for its tracer
    before its run, and let it run once strace holds it.  Returns the
    tracer, or why it could not attach (the child then still waits: the
    caller kills it)."""
    deadline = time.monotonic() + within
    while (fields := _status(pid)).get("Name") != WAITING_NAME:
        if not fields:
            return "the traced child exited before it waited for its tracer"
        if time.monotonic() > deadline:
            return f"the traced child did not wait for its tracer within {within:g}s"
        time.sleep(_POLL)
    stderr = output.with_suffix(".stderr")
    with open(stderr, "wb") as errors:
        process = subprocess.Popen(
            attach_argv(pid, output, strace), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=errors, start_new_session=True,
        )  # fmt: skip
    tracer = Tracer(process, output, stderr)
    # Let go only once strace holds it: every call it makes from then on
    # stops it for strace.
    while _status(pid).get("TracerPid") != str(process.pid):
        if process.poll() is not None:
            tracer.kill()
            return f"{CANNOT_ATTACH}: {tracer._last_words()}"
        if not _status(pid) or time.monotonic() > deadline:
            tracer.kill()
            return f"strace did not hold the traced child within {within:g}s"
        time.sleep(_POLL)
    os.kill(pid, TRACER_SIGNAL)
    return tracer
