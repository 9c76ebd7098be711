# A hostile protocol target, called as `badfiles.py MODE [PATH] ARGS...`: it
# runs the reference runtime on ARGS (a child that inherits the probe pipes,
# so the trace is real), and when that child has exited it leaves its
# session folder the way MODE names, for the lab to read:
#   log-fifo      session.jsonl replaced by a FIFO (nothing ever writes it)
#   log-big PATH  session.jsonl replaced by a hard link to PATH (a large sparse file)
#   ledger-zero   world-ledger.jsonl replaced by a symlink to /dev/zero
#   ledger-link PATH  world-ledger.jsonl replaced by a symlink to PATH
#   resume-ledger-zero  as ledger-zero, only after the last child of a case
#                 (--resume without --repair-only): the fault-free run is
#                 clean, each case's recovery is not
#   boundaries N  reports model/chunk#1..N and exits 0 (no runtime, no log)
from __future__ import annotations

import os
import subprocess
import sys


def _session(args: list[str]) -> str:
    return args[args.index("--session-dir") + 1]


def _replace(path: str, make: object) -> None:
    if os.path.lexists(path):
        os.unlink(path)
    make()  # type: ignore[operator]


def _boundaries(count: int) -> None:
    report = int(os.environ["FAULTLAB_PROBE_FDS"].split(",")[0])
    lines = b"".join(b'{"boundary":"model/chunk","n":%d}\n' % n for n in range(1, count + 1))
    view = memoryview(lines)
    while view:
        view = view[os.write(report, view) :]


def main() -> int:
    mode = sys.argv[1]
    if mode == "boundaries":
        _boundaries(int(sys.argv[2]))
        return 0
    extra = sys.argv[2] if mode in ("log-big", "ledger-link") else ""
    args = sys.argv[3:] if extra else sys.argv[2:]
    fds = [int(fd) for fd in os.environ.get("FAULTLAB_PROBE_FDS", "").split(",") if fd]
    status = subprocess.call([sys.executable, "-m", "faultlab.runtime", *args], pass_fds=fds)
    session = _session(args)
    log, ledger = f"{session}/session.jsonl", f"{session}/world-ledger.jsonl"
    if mode == "log-fifo":
        _replace(log, lambda: os.mkfifo(log))
    elif mode == "log-big":
        _replace(log, lambda: os.link(extra, log))
    elif mode == "ledger-zero" or (
        mode == "resume-ledger-zero" and "--resume" in args and "--repair-only" not in args
    ):
        _replace(ledger, lambda: os.symlink("/dev/zero", ledger))
    elif mode == "ledger-link":
        _replace(ledger, lambda: os.symlink(extra, ledger))
    return status


if __name__ == "__main__":
    sys.exit(main())
