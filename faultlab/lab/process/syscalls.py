# The system-call recorder: ground truth about files that the target cannot
# fake.  The reference run of a scenario can be exec'd under strace; this
# module owns the strace command line and the parser that turns its output
# into file facts in the probe's own vocabulary (create, write, fsync,
# dirsync, truncate, link, rename, unlink), each placed between the probe
# reports it happened between.  The probe writes every report to its report
# pipe before its next system call when FAULTLAB_TRACED is set, and those
# pipe writes are in the same strace stream, so each report's position in
# the stream is exact.  Only files under the run's session directory are
# modelled (the log, its lock, the world ledger, temp and cut files); the
# probe pipes, stderr and everything else are ignored.
from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from faultlab.lab.process.filemodel import MAX_WRITE_DATA, FileModel
from faultlab.lab.process.spawn import Child
from faultlab.lab.process.stracetext import calls
from faultlab.probe import RELEASED

__all__ = [
    "SYSCALLS",
    "SyscallTrace",
    "attach_argv",
    "parse_strace",
    "strace_path",
    "strace_unusable",
    "syscall_facts",
    "traced_argv",
]

# What strace records: file calls, every kind of write and sync, lseek (the
# position a plain write lands at), what shares or copies descriptors (dup,
# fcntl, clone, fork, execve, close_range), and the I/O the model cannot see
# into (mmap, io_uring, copies between files), so that it is named.  Reads
# and stats are not traced.
SYSCALLS = (
    "open,openat,openat2,creat,write,pwrite64,writev,pwritev,pwritev2,fsync,fdatasync,"
    "sync_file_range,syncfs,sync,ftruncate,truncate,fallocate,rename,renameat,renameat2,"
    "link,linkat,unlink,unlinkat,lseek,close,close_range,dup,dup2,dup3,fcntl,clone,clone3,"
    "fork,vfork,execve,execveat,mmap,io_uring_setup,io_uring_enter,copy_file_range,splice,"
    "sendfile"
)
_DATA = MAX_WRITE_DATA


def strace_path() -> str | None:
    """The strace executable, or None where tracing is unavailable."""
    return shutil.which("strace")


@functools.cache
def strace_unusable(strace: str) -> str | None:
    """Why ``strace`` cannot trace a child here (None: it can).  Installed
    is not enough: a container may forbid ptrace, and then every traced
    reference run would fail instead of falling back.  Asked once per lab
    process."""
    argv = traced_argv(["true"], Path(os.devnull), strace)
    try:
        done = subprocess.run(argv, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"strace could not be run: {exc}"
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"strace cannot trace here: {lines[-1] if lines else f'exit {done.returncode}'}"
    return None


def traced_argv(argv: list[str], output: Path, strace: str) -> list[str]:
    """``argv`` run under strace, following forks, writing to ``output``.
    ``--seccomp-bpf`` stops only at the traced calls (the rest run at full
    speed); ``-xx`` prints every string and path in hex, so no byte of a
    path or of the written data can confuse the parser."""
    return [
        strace, "-f", "-y", "-qq", "--seccomp-bpf", "-xx", "-s", str(_DATA),
        "-e", f"trace={SYSCALLS}", "-o", str(output), "--", *argv,
    ]  # fmt: skip


def attach_argv(pid: int, output: Path, strace: str) -> list[str]:
    """strace attached to the running process ``pid`` (and what it forks),
    printing what `traced_argv` prints.  Without ``--seccomp-bpf``, which
    works only on a command strace starts: every call of the process stops
    it, the untraced ones unprinted (a forked runtime makes few)."""
    return [
        strace, "-f", "-y", "-qq", "-xx", "-s", str(_DATA), "-e", f"trace={SYSCALLS}",
        "-o", str(output), "-p", str(pid),
    ]  # fmt: skip


@dataclass(frozen=True, slots=True)
class SyscallTrace:
    """What the parser made of one traced run.

    ``reports``: the probe's report lines as the target wrote them, in
    order; ``facts``: the file facts the system calls show, each with
    ``after``, the number of reports written before it.  ``data``: the
    bytes of every write to a file of the session; a ``write`` fact's ``w``
    is its index here (``None``: strace printed fewer bytes than were
    written, a write longer than ``-s``).  Kept beside the facts, not in
    them, so a trace stays JSON (the SQLite states are rebuilt from these
    bytes: faultlab/lab/faults/sqlitestates.py).  ``unsupported``: the calls
    whose effect on a session file the model cannot know (filemodel.py);
    when there are any, the facts are not ground truth.
    """

    reports: tuple[dict[str, Any], ...]
    facts: tuple[dict[str, Any], ...]
    data: tuple[bytes, ...] = ()
    unsupported: tuple[str, ...] = ()


def parse_strace(
    text: str, root: str | Path, report_inode: int, *, existing: Mapping[str, int] | None = None
) -> SyscallTrace:
    """The file facts of the files under ``root`` and the probe reports written
    to the pipe ``report_inode``, from strace output made by `traced_argv`.
    ``existing``: the files already under ``root`` when the run started, with
    their sizes (a recovery run's log)."""
    model = FileModel.over(str(root), report_inode, existing or {})
    for call in calls(text):
        model.take(call)
    return SyscallTrace(
        tuple(model.reports), tuple(model.facts), tuple(model.data), tuple(model.unsupported)
    )


def syscall_facts(
    output: Path, session: Path, child: Child, existing: Mapping[str, int] | None = None
) -> tuple[tuple[dict[str, Any], ...], tuple[bytes, ...], tuple[str, ...], str]:
    """The traced run's file facts and written bytes, or () and either the
    calls the file model cannot judge or why the trace cannot be used.
    ``existing``: the session's files and their sizes when the run started."""
    try:
        text = output.read_text("ascii", errors="replace")
    except OSError as exc:
        return (), (), (), f"the system-call trace could not be read: {exc}"
    parsed = parse_strace(text, session, child.report_inode, existing=existing)
    # A forked child's last line on the report pipe is its release (the fork
    # server's word, not a probe report: spawn.Child keeps it out of the trace).
    reports = [r for r in parsed.reports if not (len(r) == 1 and RELEASED in r)]
    if reports != child.trace:
        # The reports in the stream are how facts are placed; without them
        # in full the placement would be a guess.
        return (
            (),
            (),
            (),
            (
                f"the system-call trace shows {len(reports)} probe report(s), "
                f"the lab read {len(child.trace)}: the target's own file facts are used"
            ),
        )
    if parsed.unsupported:
        return (), (), parsed.unsupported, ""
    return parsed.facts, parsed.data, (), ""
