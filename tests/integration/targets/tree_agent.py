# A stand-in for a black-box agent that starts processes a process-group kill
# misses (tests/integration/test_process_tree.py).  Usage:
#   tree_agent.py MODE MARKER READY_FILE [CODE]
# Every process it forks keeps this command line, so the MARKER finds them all.
# It writes the pids it started to READY_FILE (then renames it into place) and
# sleeps; modes:
#   escape  a grandchild calls setsid, ignores SIGTERM, closes its fds, sleeps;
#           its parent exits, so it is an orphan
#   daemon  the classic double fork (setsid between, chdir /), then the agent exits 0
#   helper  a helper in its own session (like Codex's MCP servers) and a
#           worker in the agent's own group
#   chain   a process that forks a child and exits, again and again
#   exit    exit with CODE at once (no READY_FILE)
from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable


def ready(path: str, pids: list[int]) -> None:
    with open(path + ".tmp", "w") as handle:
        handle.write(" ".join(str(host_pid(pid)) for pid in pids))
    os.rename(path + ".tmp", path)


def host_pid(pid: int) -> int:
    """`pid` as the test sees it: the supervisor may have given the tree a PID
    namespace of its own, and /proc (the host's mount) knows both numbers."""
    ours = os.readlink("/proc/self/ns/pid")
    for name in os.listdir("/proc"):
        try:
            if not name.isdigit() or os.readlink(f"/proc/{name}/ns/pid") != ours:
                continue
            with open(f"/proc/{name}/status") as handle:
                for line in handle:
                    if line.startswith("NSpid:") and int(line.split()[-1]) == pid:
                        return int(name)
        except (OSError, ValueError):
            continue
    return pid


def sleep_forever() -> None:
    while True:
        time.sleep(60)


def hostile(report: int) -> None:
    """Detach from everything the agent had, refuse the polite signal, say so
    on `report`, close every fd."""
    os.setsid()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    os.write(report, f"{os.getpid()}\n".encode())
    os.closerange(0, 1024)
    sleep_forever()


def fork_into(body: Callable[[], None]) -> int:
    pid = os.fork()
    if pid == 0:
        try:
            body()
        finally:
            os._exit(0)
    return pid


def escape(path: str) -> None:
    read, write = os.pipe()

    def child() -> None:
        fork_into(lambda: hostile(write))  # and exit: the grandchild is orphaned

    first = fork_into(child)
    os.waitpid(first, 0)
    ready(path, [int(os.read(read, 64))])
    sleep_forever()


def daemon(path: str) -> None:
    read, write = os.pipe()

    def first() -> None:
        os.setsid()

        def second() -> None:
            os.chdir("/")
            hostile(write)

        fork_into(second)  # and exit: the daemon is orphaned

    pid = fork_into(first)
    os.waitpid(pid, 0)
    ready(path, [int(os.read(read, 64))])
    sys.exit(0)


def helper(path: str) -> None:
    read, write = os.pipe()

    def own_session() -> None:
        os.setsid()
        os.write(write, b"in\n")
        sleep_forever()

    helper_pid = fork_into(own_session)
    os.read(read, 64)  # the helper left the agent's group before the lab looks
    worker_pid = fork_into(sleep_forever)
    ready(path, [helper_pid, worker_pid])
    sleep_forever()


def chain(path: str) -> None:
    def link() -> None:
        while True:
            time.sleep(0.002)
            if os.fork() != 0:
                os._exit(0)  # the child goes on: the chain's pid keeps moving

    fork_into(link)
    ready(path, [])
    sleep_forever()


def main() -> None:
    mode, _marker, path = sys.argv[1:4]
    if mode == "exit":
        sys.exit(int(sys.argv[4]))
    {"escape": escape, "daemon": daemon, "helper": helper, "chain": chain}[mode](path)


if __name__ == "__main__":
    main()
