# How the per-case supervisor starts the agent (faultlab/lab/process/reaper.py):
# in a freezer cgroup of its own if asked, in a network namespace with
# loopback only and the relays to the lab if asked, and either right here
# (`_spawn_here`) or under a tiny init of a PID namespace of its own
# (`_spawn_in_namespace`, `_namespace_init`); then the fds passed through to
# the agent are closed here.  No faultlab import beyond its siblings: the
# supervisor runs as `python -I -S`.
from __future__ import annotations

import os

TYPE_CHECKING = False  # typing is not imported: it costs the supervisor's start time
if TYPE_CHECKING or __package__:  # mypy; imported, or `python -m faultlab.lab.process.reaper`
    import signal

    from faultlab.forking.procscan import _join_cgroup, _move, _own_freezer, _processes
    from faultlab.lab.process.reaperkill import (
        _DEATH_SIGNAL,
        _PR_SET_PDEATHSIG,
        _STOP_SIGNALS,
        _libc,
        _Tree,
    )
else:  # `python -I -S reaper.py` put this directory on sys.path (reaper.py)
    import _signal as signal  # the C module: signal.py's enums cost ~8 ms a start

    from procscan import _join_cgroup, _move, _own_freezer, _processes
    from reaperkill import _DEATH_SIGNAL, _PR_SET_PDEATHSIG, _STOP_SIGNALS, _libc, _Tree

__all__ = ["_spawn"]

_CLONE_NEWNS = 0x00020000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNET = 0x40000000
_MS_BIND, _MS_REC, _MS_PRIVATE = 0x1000, 0x4000, 0x40000
_RESOLV_CONF = "/etc/resolv.conf"
_STUB_RESOLV = b"# faultlab: the network namespace's resolver stub (NXDOMAIN for every name)\n" \
               b"nameserver 127.0.0.1\noptions attempts:1\n"  # fmt: skip
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1


def _spawn(tree: _Tree, argv: list[str], options: set[str], forwards: dict[int, str]) -> bool:
    # Signals ignored here (Python ignores SIGPIPE and SIGXFSZ) would stay
    # ignored across exec: the agent gets every disposition at its default.
    defaults = set(range(1, 32)) - {int(signal.SIGKILL), int(signal.SIGSTOP)}
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
    import socket  # only here: a network namespace is rare, and socket costs ~8 ms to import
    import struct

    if _libc("unshare", _CLONE_NEWNET) != 0:
        return False
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        request = struct.pack("16sh22x", b"lo", 0)
        flags = struct.unpack("16sh22x", fcntl.ioctl(probe, _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(probe, _SIOCSIFFLAGS, struct.pack("16sh22x", b"lo", flags | _IFF_UP))
    for port, path in forwards.items():
        tree.relays.listen(port, path)
    _resolve_here(tree)
    return True


def _resolve_here(tree: _Tree) -> None:
    """Point the agent's resolver at the stub on 127.0.0.1:53 (reaperrelay.py):
    a private /etc/resolv.conf, bind-mounted in a mount namespace of our own.
    Nothing changes where the kernel refuses a step: look-ups then fail as
    they did, slowly for an agent that retries an unreachable server."""
    import ctypes  # only here, like socket above

    libc = ctypes.CDLL(None, use_errno=True)
    if not os.path.isfile(_RESOLV_CONF) or libc.unshare(_CLONE_NEWNS) != 0:
        return
    if libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
        return  # shared mounts: a bind mount here would reach the lab's own view
    try:
        tree.relays.answer_names(tree.say)
    except OSError:
        return
    path = f"/tmp/faultlab-resolv-{os.getpid()}"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    except OSError:
        return
    try:
        os.write(fd, _STUB_RESOLV)
        os.close(fd)
        libc.mount(path.encode(), _RESOLV_CONF.encode(), None, _MS_BIND, None)
    finally:
        os.unlink(path)  # the mount holds the file; no name is left behind


def _close_passed() -> None:
    """Close the fds passed through to the agent (inheritable, above 2), and
    put /dev/null in place of its stdin and stdout: a copy held here would
    keep the agent's pipes (a probe's report pipe, an ACP agent's stdio)
    from reaching EOF when the agent and its helpers are gone.  (stderr
    stays: the supervisor's own errors go there.)"""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(null, fd)
    os.close(null)
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd <= 2:
            continue
        try:
            if os.get_inheritable(fd):
                os.close(fd)
        except OSError:  # the listing's own fd, closed already
            pass


def _spawn_here(tree: _Tree, argv: list[str], defaults: set[int]) -> bool:
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
    return _libc("unshare", _CLONE_NEWPID) == 0


def _spawn_in_namespace(tree: _Tree, argv: list[str], defaults: set[int]) -> bool:
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
    # The agent cannot be reaped before the go-ahead: find its pid as the lab
    # sees it, among the pids above init's first (pids are handed out in
    # rising order), in all of /proc if the numbers wrapped around.
    children = [p for p, (ppid, *_rest) in _processes(pid).items() if ppid == pid]
    if not children:
        children = [p for p, (ppid, *_rest) in _processes().items() if ppid == pid]
    if not children:
        tree.say("error the agent started in its namespace but cannot be found in /proc")
        return False
    tree.agent = children[0]
    os.set_blocking(report_r, False)
    os.write(go_w, b"g")
    return True


def _namespace_init(tree: _Tree, argv: list[str], defaults: set[int], report: int, go: int) -> None:
    """The namespace's init: start the agent, reap every orphan of the tree,
    report the agent's status; it dies with the supervisor (PDEATHSIG)."""
    code = 0
    try:
        _libc("prctl", _PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
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
