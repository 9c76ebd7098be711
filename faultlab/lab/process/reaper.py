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
#
# The supervisor's parts lie beside it, each stdlib only: its state and kill
# (reaperkill.py), the agent's start (reaperspawn.py), the /proc scans and
# pid-safe signals (faultlab/forking/procscan.py, shared with the fork
# servers, which contain their forked children with the same scans), the
# network relays (reaperrelay.py).  Run as a script, it puts this directory
# and faultlab/forking/ at the end of sys.path to import them.
from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing is not imported: it costs the supervisor's start time
if TYPE_CHECKING or __package__:  # mypy; imported, or `python -m faultlab.lab.process.reaper`
    from faultlab.lab.process.reaperkill import (
        _DEATH_SIGNAL,
        _PR_SET_PDEATHSIG,
        _finish,
        _libc,
        _libc_errno,
        _Tree,
        freeze_kill,
    )
    from faultlab.lab.process.reaperspawn import _spawn
else:  # `python -I -S reaper.py`: no faultlab on sys.path, only the stdlib
    _here = os.path.dirname(os.path.abspath(__file__))
    sys.path.append(_here)
    sys.path.append(os.path.join(os.path.dirname(os.path.dirname(_here)), "forking"))
    from reaperkill import (
        _DEATH_SIGNAL,
        _PR_SET_PDEATHSIG,
        _finish,
        _libc,
        _libc_errno,
        _Tree,
        freeze_kill,
    )
    from reaperspawn import _spawn

__all__ = ["freeze_kill", "main"]

_PR_SET_CHILD_SUBREAPER = 36
_TICK = 0.5  # seconds between checks that the lab is still our parent


def _setup() -> str:
    """Become a subreaper, told of the lab's death; why not ("" if done)."""
    for option, value in ((_PR_SET_CHILD_SUBREAPER, 1), (_PR_SET_PDEATHSIG, int(_DEATH_SIGNAL))):
        if _libc("prctl", option, value, 0, 0, 0) != 0:
            return _libc_errno("prctl", option, value, 0, 0, 0)
    return ""


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
    failed = _setup()
    if failed:
        tree.say(f"error prctl failed: {failed}")
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
