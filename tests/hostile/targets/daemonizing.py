# A hostile protocol target, called as `daemonizing.py MODE MARKER ARGS...`
# (the lab gives a target a trimmed environment, so both come on the command
# line; the daemon keeps it, so MARKER finds it): before it becomes the
# reference runtime on ARGS (exec, so it still speaks the probe protocol and
# writes a real log) it leaves a grandchild behind, daemonized in the way
# MODE names, the ways real programs do it:
#   setsid      fork, the child calls setsid and sleeps
#   double      fork, the child forks again and exits (the grandchild is an orphan)
#   group       fork, the child moves to a process group of its own
#   immune      as setsid, and the daemon ignores SIGTERM and SIGHUP
#   all         each of the four above, at once
#   pipe        fork, the child keeps the probe pipes open (and never closes them)
#   noisy       writes 5 MB to stdout, then runs normally
# Every daemon but `pipe`'s closes all its fds, so only the lab's process
# tree containment can find it.
from __future__ import annotations

import os
import signal
import sys
import time


def _linger(close: bool) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    if close:
        os.closerange(0, 1024)
    while True:
        time.sleep(60)


def _daemonize(mode: str) -> None:
    if os.fork() != 0:
        if mode == "double":
            os.wait()  # the middle process exits at once
        return
    if mode in ("setsid", "immune"):
        os.setsid()
    elif mode == "group":
        os.setpgid(0, 0)
    elif mode == "double":
        if os.fork() != 0:
            os._exit(0)
        os.setsid()
    try:
        _linger(close=mode != "pipe")
    finally:
        os._exit(0)


def main() -> None:
    mode = sys.argv[1]
    if mode == "noisy":
        chunk = b"x" * 65535 + b"\n"
        for _ in range(5_000_000 // len(chunk)):
            os.write(1, chunk)
    else:
        for each in ("setsid", "double", "group", "immune") if mode == "all" else (mode,):
            _daemonize(each)
    os.execv(sys.executable, [sys.executable, "-m", "faultlab.runtime", *sys.argv[3:]])


if __name__ == "__main__":
    main()
