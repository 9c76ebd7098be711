# The per-case supervisor of a black-box agent (Linux only): it makes itself a
# child subreaper, spawns the agent in a session of its own and reaps every
# process of the tree, so no descendant can escape it by re-parenting, whatever
# group or session it moves to.  Where it may (root, here and in CI) it also
# gives the tree a PID namespace of its own under a tiny init: killing that
# init makes the kernel kill every process of the namespace at once, so no
# fork race can outrun the kill and the tree dies with the supervisor even if
# the supervisor is SIGKILLed.  Elsewhere it freezes, then kills, what it finds.
# It kills the tree when the lab asks, when the lab's control pipe reaches
# EOF, or when the lab dies.
# Lean on purpose: the lab runs it as `python -I -S reaper.py` once per case
# (few stdlib modules, no faultlab import; try/except, not contextlib, whose
# imports cost start time); `python -m faultlab.lab.process.reaper` works too.
# Protocol (faultlab/lab/process/tree.py is the other side):
#   argv:    CONTROL_FD STATUS_FD LAB_PID OPTIONS FORWARDS -- AGENT_ARGV...
#            (OPTIONS: "-" or a comma list of "freezer", to also put the tree
#            in a freezer cgroup of its own, whose member list is read instead
#            of scanning all of /proc; "pidns", to give the tree a PID
#            namespace when unshare(CLONE_NEWPID) is allowed; "netns", to give
#            it a network namespace with loopback only.  The subreaper is
#            there either way.  FORWARDS: "-" or "PORT=PATH;..." the TCP ports
#            on 127.0.0.1 inside the network namespace that are relayed to the
#            lab's Unix sockets: the agent reaches the lab's servers, nothing else.)
#   control: one byte per command: T (kill the tree, then exit), A (kill the
#            agent's process group only); EOF: the lab is gone, kill the tree.
#   status:  lines "pid N [pidns INIT] [netns]" (the agent's pid as the lab
#            sees it; "pidns": the tree has its own PID namespace, whose init,
#            the parent of its orphans, is INIT; "netns": and a network
#            namespace of its own), "exit N" (the
#            agent's status, -SIG if killed),
#            "agent-killed", "error MESSAGE", "done" (then the supervisor exits).
from __future__ import annotations

import ctypes
import os
import select
import signal
import socket
import sys
import time

__all__ = ["main"]

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNET = 0x40000000
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1
_DEATH_SIGNAL = signal.SIGUSR1  # the parent *thread* died: check whether the lab did
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_KILL_BOUND = 20.0  # seconds a freeze-kill may take before the supervisor gives up
_TICK = 0.5  # seconds between checks that the lab is still our parent
_FREEZER = "/sys/fs/cgroup/freezer"


class _Tree:
    """The supervisor's state: the agent, its status, the pipes."""

    def __init__(self, control: int, status: int, lab: int) -> None:
        self.control = control
        self.status = status
        self.lab = lab
        self.agent = 0
        self.code: int | None = None
        self.reported = False
        self.cgroup: str | None = None  # the case's cgroup directory, if any
        self.init = 0  # the PID namespace's init (our child), 0 if none or reaped
        self.init_report = -1  # its reports: "spawned", "error ...", "exit N"
        self.init_buffer = b""
        self.init_go = -1  # our end of its go-ahead pipe (EOF: we are gone)
        self.relays = _Relays()  # the network namespace's way to the lab, if it has one
        self.stop = False  # a signal asked us to kill the tree and exit
        self.death = False  # the parent thread died (PR_SET_PDEATHSIG)
        self.wake_r, wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(_DEATH_SIGNAL, self._on_death)
        for signum in _STOP_SIGNALS:
            signal.signal(signum, self._on_stop)

    def _on_death(self, *_: object) -> None:
        self.death = True

    def _on_stop(self, *_: object) -> None:
        self.stop = True

    def say(self, line: str) -> None:
        try:  # noqa: SIM105
            os.write(self.status, line.encode() + b"\n")
        except OSError:  # the lab may be gone: we still clean up
            pass

    def reap(self) -> None:
        """Reap every exited child (orphans re-parent to us); note the agent's status."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            if pid == self.init:
                self.init = 0  # the namespace is gone, and all of the tree with it
                self.read_init()
                if self.code is None:
                    self.code = -int(signal.SIGKILL)
            elif pid == self.agent:
                self.code = os.waitstatus_to_exitcode(status)
        self.read_init()
        if self.code is not None and not self.reported:
            self.reported = True
            self.say(f"exit {self.code}")

    def read_init(self) -> None:
        """Take the namespace init's "exit N" report of the agent, if one came."""
        if self.init_report < 0:
            return
        try:
            while data := os.read(self.init_report, 512):
                self.init_buffer += data
        except BlockingIOError:
            pass
        *lines, self.init_buffer = self.init_buffer.split(b"\n")
        for line in lines:
            if line.startswith(b"exit ") and self.code is None:
                self.code = int(line.split()[1])

    def lab_gone(self) -> bool:
        return os.getppid() != self.lab

    def pause(self, timeout: float) -> bool:
        """Wait up to `timeout` for a signal or a command; True if a command is readable."""
        watched = [self.control, self.wake_r] + ([self.init_report] if self.init else [])
        readable, writable, _ = select.select(
            watched + self.relays.readers(), self.relays.writers(), [], timeout
        )
        self.relays.serve(readable, writable)
        try:
            while os.read(self.wake_r, 512):
                pass
        except BlockingIOError:
            pass
        return self.control in readable


def _processes() -> dict[int, tuple[int, int, str, int]]:
    """Every process: pid -> (ppid, pgid, state, start time), from /proc."""
    found: dict[int, tuple[int, int, str, int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        stat = _stat(int(name))
        if stat is not None:
            found[int(name)] = stat
    return found


def _stat(pid: int) -> tuple[int, int, str, int] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    # The command name is in parentheses and may hold anything: split after it.
    fields = data[data.rfind(b")") + 2 :].split()
    return int(fields[1]), int(fields[2]), fields[0].decode(), int(fields[19])


def _descendants(root: int) -> dict[int, tuple[int, int, str, int]]:
    table = _processes()
    children: dict[int, list[int]] = {}
    for pid, (ppid, *_rest) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: dict[int, tuple[int, int, str, int]] = {}
    todo = list(children.get(root, ()))
    while todo:
        pid = todo.pop()
        found[pid] = table[pid]
        todo.extend(children.get(pid, ()))
    return found


def _members(cgroup: str) -> dict[int, tuple[int, int, str, int]]:
    try:
        with open(f"{cgroup}/cgroup.procs", "rb") as handle:
            pids = [int(pid) for pid in handle.read().split()]
    except OSError:
        return {}
    found = {}
    for pid in pids:
        stat = _stat(pid)
        if stat is not None:
            found[pid] = stat
    return found


def _own_freezer() -> str | None:
    """The directory of the freezer cgroup we are in, None if there is none."""
    try:
        with open("/proc/self/cgroup") as handle:
            lines = [line.rstrip("\n").split(":", 2) for line in handle]
    except OSError:
        return None
    for fields in lines:
        if len(fields) == 3 and "freezer" in fields[1].split(","):
            return _FREEZER + fields[2].rstrip("/")
    return None


def _join_cgroup(home: str) -> str | None:
    """Make a freezer cgroup for the case under `home` and move into it, so the
    agent is born inside; the caller moves back out after the spawn.  None
    (and nothing changed) if cgroups cannot be written here."""
    path = f"{home}/faultlab-case-{os.getpid()}"
    try:
        os.mkdir(path)
    except OSError:
        return None
    try:
        _move(path)
    except OSError:
        os.rmdir(path)
        return None
    return path


def _move(cgroup: str) -> None:
    with open(f"{cgroup}/cgroup.procs", "w") as handle:
        handle.write(str(os.getpid()))


def _send(pid: int, start: int, signum: int) -> None:
    """Signal `pid` only if it is still the process the scan saw (its start time):
    a pidfd opened first pins the process, so a reused pid is never signalled."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    except OSError:  # no pidfds (old kernel): a start-time check, then kill
        pidfd = -1
    try:
        stat = _stat(pid)
        if stat is not None and stat[3] == start:
            if pidfd >= 0:
                signal.pidfd_send_signal(pidfd, signum)
            else:
                os.kill(pid, signum)
    except ProcessLookupError:
        pass
    finally:
        if pidfd >= 0:
            os.close(pidfd)


def freeze_kill(tree: _Tree, group: int | None, *, scan: bool = False) -> bool:
    """SIGSTOP every live descendant (of process group `group`, or all; the
    case's cgroup members, or with `scan` or no cgroup every process under us
    in /proc), rescan
    until no new one appears, SIGKILL them all, reap; repeat until none is left.
    A stopped process cannot fork, so a fork race cannot outrun the kill.
    Returns False if some were still left after `_KILL_BOUND` seconds."""
    cgroup = None if scan else tree.cgroup
    deadline = time.monotonic() + _KILL_BOUND
    while True:
        tree.reap()
        live, groups = _targets(cgroup, group)
        if not live:
            return True
        if time.monotonic() > deadline:
            return False
        stopped: dict[int, int] = {}
        while new := {pid: start for pid, start in live.items() if pid not in stopped}:
            _stop_groups(groups, group)
            for pid, start in new.items():
                _send(pid, start, signal.SIGSTOP)
            stopped.update(new)
            live, groups = _targets(cgroup, group)
        for pid, start in stopped.items():
            _send(pid, start, signal.SIGKILL)
        tree.pause(0.005)


def _stop_groups(groups: set[int], group: int | None) -> None:
    """SIGSTOP every process group the tree's live members were seen in, at
    once: the kernel delivers a group signal to every member and a fork in
    flight restarts after it, so a fork chain inside a group cannot outrun
    it, as it can outrun one signal per scanned pid (a /proc scan takes
    100 ms and more under load, a chain link lives 2 ms).  Never our own
    group."""
    own = os.getpgrp()
    for pgid in groups:
        if pgid == own or pgid <= 1 or (group is not None and pgid != group):
            continue
        try:  # noqa: SIM105
            os.killpg(pgid, signal.SIGSTOP)
        except OSError:  # the group is gone: nothing to stop
            pass


def _targets(cgroup: str | None, group: int | None) -> tuple[dict[int, int], set[int]]:
    """The live members (pid -> start time) and the process groups they are in."""
    found = _members(cgroup) if cgroup else _descendants(os.getpid())
    live = {
        pid: (start, pgid)
        for pid, (_ppid, pgid, state, start) in found.items()
        if state != "Z" and (group is None or pgid == group)
    }
    return {pid: start for pid, (start, _) in live.items()}, {pgid for _, pgid in live.values()}


def _end_namespace(tree: _Tree) -> None:
    """SIGKILL the namespace's init: the kernel then kills every process of the
    namespace before init's own exit can be reaped, so no fork can outrun it."""
    if not tree.init:
        return
    try:
        os.kill(tree.init, signal.SIGKILL)  # our unreaped child: its pid is not reused
        os.waitpid(tree.init, 0)
    except ChildProcessError:
        pass
    tree.init = 0
    tree.read_init()
    if tree.code is None:
        tree.code = -int(signal.SIGKILL)


def _finish(tree: _Tree) -> int:
    _end_namespace(tree)
    # The cgroup's members first (fast).  Anything that left the cgroup (only
    # root can) re-parented to us once its cgroup ancestors died: so a scan
    # of all of /proc is needed only while we still have a live child.
    killed = freeze_kill(tree, None)
    if killed and tree.cgroup is not None and _has_children(tree):
        killed = freeze_kill(tree, None, scan=True)
    if not killed:
        tree.say("error some processes survived the kill")
    tree.reap()
    if tree.cgroup is not None:
        try:  # noqa: SIM105
            os.rmdir(tree.cgroup)
        except OSError:  # a member not yet torn down: an empty directory stays
            pass
    tree.say("done")
    return 0


def _has_children(tree: _Tree) -> bool:
    """Whether any child is left, live or not yet reaped (ECHILD: none)."""
    tree.reap()
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True


def _spawn(tree: _Tree, argv: list[str], options: set[str], forwards: dict[int, str]) -> bool:
    # Signals ignored here (Python ignores SIGPIPE and SIGXFSZ) would stay
    # ignored across exec: the agent gets every disposition at its default.
    defaults = {signal.Signals(n) for n in range(1, 32)} - {signal.SIGKILL, signal.SIGSTOP}
    home = _own_freezer() if "freezer" in options else None
    tree.cgroup = _join_cgroup(home) if home is not None else None
    networked = "netns" in options and _enter_network(tree, forwards)
    try:
        if "pidns" in options and _unshare_pid():
            started = _spawn_in_namespace(tree, argv, defaults)
        else:
            started = _spawn_here(tree, argv, defaults)
    finally:
        if tree.cgroup is not None and home is not None:
            _move(home)  # the supervisor must stay out of what it kills
    _close_passed()
    if started:
        report = f"pid {tree.agent}" + (f" pidns {tree.init}" if tree.init else "")
        tree.say(report + (" netns" if networked else ""))
    return started


def _enter_network(tree: _Tree, forwards: dict[int, str]) -> bool:
    """Move into a network namespace of our own (the agent is born in it) with
    loopback up, and listen on 127.0.0.1:PORT for each relay.  False, nothing
    changed, if the kernel does not allow it."""
    import fcntl
    import struct

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(_CLONE_NEWNET) != 0:
        return False
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        request = struct.pack("16sh22x", b"lo", 0)
        flags = struct.unpack("16sh22x", fcntl.ioctl(probe, _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(probe, _SIOCSIFFLAGS, struct.pack("16sh22x", b"lo", flags | _IFF_UP))
    for port, path in forwards.items():
        tree.relays.listen(port, path)
    return True


class _End:
    """One socket of a relayed connection: what is still to be written to it."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.pending = bytearray()
        self.ended = False  # it sent its end of file (or failed)
        self.peer: _End = self


class _Relays:
    """127.0.0.1:PORT inside the tree's network namespace, relayed to the
    lab's Unix sockets.  Single-threaded (non-blocking, served from the
    supervisor's select loop): after unshare(CLONE_NEWPID) a process may
    not create threads."""

    _ROOM = 1 << 20  # bytes buffered per direction before reading pauses

    def __init__(self) -> None:
        self.listeners: dict[int, tuple[socket.socket, str]] = {}  # by fd
        self.ends: dict[int, _End] = {}  # by fd

    def listen(self, port: int, path: str) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(64)
        listener.setblocking(False)
        self.listeners[listener.fileno()] = (listener, path)

    def close_listeners(self) -> None:
        for listener, _path in self.listeners.values():
            listener.close()

    def readers(self) -> list[int]:
        return list(self.listeners) + [
            fd for fd, end in self.ends.items()
            if not end.ended and len(end.peer.pending) < self._ROOM
        ]  # fmt: skip

    def writers(self) -> list[int]:
        return [fd for fd, end in self.ends.items() if end.pending]

    def serve(self, readable: list[int], writable: list[int]) -> None:
        for fd in readable:
            if fd in self.listeners:
                self._accept(*self.listeners[fd])
            elif (end := self.ends.get(fd)) is not None:
                self._read(end)
        for fd in writable:
            if (end := self.ends.get(fd)) is not None:
                self._write(end)

    def _accept(self, listener: socket.socket, path: str) -> None:
        try:
            agent, _ = listener.accept()
        except OSError:
            return
        lab = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            lab.connect(path)  # a local socket: at once
        except OSError:
            agent.close()  # the lab's server is gone: the agent sees its connection end
            lab.close()
            return
        a, b = _End(agent), _End(lab)
        a.peer, b.peer = b, a
        for end in (a, b):
            end.sock.setblocking(False)
            self.ends[end.sock.fileno()] = end

    def _read(self, end: _End) -> None:
        try:
            data = end.sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            end.peer.pending += data
            return
        end.ended = True  # the agent was killed, or a side closed: pass the end on
        if not end.peer.pending:
            self._shut(end.peer)
        self._maybe_close(end)

    def _write(self, end: _End) -> None:
        try:
            sent = end.sock.send(end.pending)
        except BlockingIOError:
            return
        except OSError:
            end.pending.clear()
            end.ended = end.peer.ended = True
            self._maybe_close(end)
            return
        del end.pending[:sent]
        if not end.pending and end.peer.ended:
            self._shut(end)
        self._maybe_close(end)

    @staticmethod
    def _shut(end: _End) -> None:
        try:  # noqa: SIM105
            end.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def _maybe_close(self, end: _End) -> None:
        pair = (end, end.peer)
        if all(e.ended and not e.peer.pending for e in pair):
            for e in pair:
                self.ends.pop(e.sock.fileno(), None)
                e.sock.close()



def _close_passed() -> None:
    """Close the fds passed through to the agent (inheritable, above 2): a
    copy held here would keep the agent's pipes (a probe's report pipe) from
    reaching EOF when the agent and its helpers are gone."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd <= 2:
            continue
        try:
            if os.get_inheritable(fd):
                os.close(fd)
        except OSError:  # the listing's own fd, closed already
            pass


def _spawn_here(tree: _Tree, argv: list[str], defaults: set[signal.Signals]) -> bool:
    try:
        tree.agent = os.posix_spawnp(
            argv[0], argv, os.environ, setsid=True, setsigdef=defaults, setsigmask=()
        )
    except OSError as error:
        tree.say(f"error cannot start {argv[0]!r}: {error.strerror or error}")
        return False
    return True


def _unshare_pid() -> bool:
    """Make our next child the init of a new PID namespace; False if not allowed."""
    libc = ctypes.CDLL(None, use_errno=True)
    return bool(libc.unshare(_CLONE_NEWPID) == 0)


def _spawn_in_namespace(tree: _Tree, argv: list[str], defaults: set[signal.Signals]) -> bool:
    report_r, report_w = os.pipe()
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # PID 1 of the tree's namespace
        os.close(report_r)
        os.close(go_w)
        _namespace_init(tree, argv, defaults, report_w, go_r)
    os.close(report_w)
    os.close(go_r)
    tree.init, tree.init_report, tree.init_go = pid, report_r, go_w
    first = b""
    while not first.endswith(b"\n"):
        data = os.read(report_r, 512)  # init answers at once, or dies (EOF)
        if not data:
            break
        first += data
    line, _, rest = first.partition(b"\n")
    tree.init_buffer = rest
    if line != b"spawned":
        message = line.decode(errors="replace")[len("error ") :] or "the namespace init died"
        tree.say(f"error {message}")
        return False
    # The agent cannot be reaped before the go-ahead: find its pid as the lab sees it.
    children = [p for p, (ppid, *_rest) in _processes().items() if ppid == pid]
    if not children:
        tree.say("error the agent started in its namespace but cannot be found in /proc")
        return False
    tree.agent = children[0]
    os.set_blocking(report_r, False)
    os.write(go_w, b"g")
    return True


def _namespace_init(
    tree: _Tree, argv: list[str], defaults: set[signal.Signals], report: int, go: int
) -> None:
    """The namespace's init: start the agent, reap every orphan of the tree,
    report the agent's status; it dies with the supervisor (PDEATHSIG)."""
    code = 0
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        signal.set_wakeup_fd(-1)
        for signum in (signal.SIGCHLD, _DEATH_SIGNAL, *_STOP_SIGNALS):
            signal.signal(signum, signal.SIG_DFL)
        for fd in (tree.control, tree.status, tree.wake_r):
            os.close(fd)
        tree.relays.close_listeners()
        try:
            agent = os.posix_spawnp(
                argv[0], argv, os.environ, setsid=True, setsigdef=defaults, setsigmask=()
            )
        except OSError as error:
            reason = error.strerror or error
            os.write(report, f"error cannot start {argv[0]!r}: {reason}\n".encode())
            return
        _close_passed()
        os.write(report, b"spawned\n")
        if not os.read(go, 1):  # the supervisor died before PDEATHSIG was set
            return
        while True:
            try:
                pid, status = os.waitpid(-1, 0)
            except ChildProcessError:
                os.read(go, 1)  # nothing left to reap: wait for the end (EOF)
                return
            if pid == agent:
                os.write(report, f"exit {os.waitstatus_to_exitcode(status)}\n".encode())
    except BaseException:  # init must never return into the supervisor's code
        code = 1
    finally:
        os._exit(code)


def _setup() -> bool:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        return False
    return bool(libc.prctl(_PR_SET_PDEATHSIG, int(_DEATH_SIGNAL), 0, 0, 0) == 0)


def _forwards(text: str) -> dict[int, str] | None:
    """FORWARDS ("-" or "PORT=PATH;..."); None if malformed."""
    if text == "-":
        return {}
    found = {}
    for item in text.split(";"):
        port, _, path = item.partition("=")
        if not port.isdigit() or not path:
            return None
        found[int(port)] = path
    return found


def main(args: list[str]) -> int:
    options = set(args[3].split(",")) - {"-"} if len(args) > 3 else set()
    forwards = _forwards(args[4]) if len(args) > 4 else None
    known = {"freezer", "pidns", "netns"}
    if len(args) < 7 or args[5] != "--" or not options <= known or forwards is None:
        print("usage: reaper CONTROL_FD STATUS_FD LAB_PID OPTIONS FORWARDS -- ARGV...",
              file=sys.stderr)  # fmt: skip
        return 2
    control, status, lab = int(args[0]), int(args[1]), int(args[2])
    for fd in (control, status):
        os.set_inheritable(fd, False)  # the agent must never hold the lab's pipes
    tree = _Tree(control, status, lab)
    if not _setup():
        tree.say(f"error prctl failed: {os.strerror(ctypes.get_errno())}")
        return 1
    # The lab may have died before PR_SET_PDEATHSIG was set: then no signal comes.
    if tree.lab_gone() or not _spawn(tree, args[6:], options, forwards):
        return _finish(tree)
    while True:
        command = tree.pause(_TICK)
        tree.reap()
        if tree.stop or ((tree.death or not command) and tree.lab_gone()):
            return _finish(tree)
        tree.death = False
        if not command:
            continue
        data = os.read(control, 64)
        if not data or b"T" in data:  # EOF: every lab-side writer is gone
            return _finish(tree)
        if b"A" in data:
            freeze_kill(tree, tree.agent)
            tree.reap()
            tree.say("agent-killed")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
