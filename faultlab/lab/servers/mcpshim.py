# What an agent starts as faultlab's MCP tool server when the lab serves the
# tool server from a fork server (faultlab/lab/servers/toolrelay.py): run as
# `python -I -S mcpshim.py RELAY -- COMMAND...`, it imports nothing but the
# standard library's socket plumbing (a bare interpreter start, not the SDK's
# second of imports), hands its stdin, stdout and stderr (the agent's pipes)
# to the case's relay, which has a tool server forked on them, and then
# stands in for that server in the agent's process tree: it lives until the
# server exits and leaves with its status; a signal it gets (the agent
# stopping its servers) is passed on; killed, its relay kills the server.
# If the relay cannot be reached it execs COMMAND, the tool server itself.
#
# Standard library only, and no faultlab import: `-S` leaves site-packages
# off the path, and the agent's working directory is never on it (`-I`).
from __future__ import annotations

import contextlib
import io
import os
import signal
import socket
import sys

_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def _fall_back(command: list[str]) -> None:
    os.execv(command[0], command)


def _leave(status: int) -> None:
    if status < 0:
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
        os._exit(128 - status)
    os._exit(status & 0xFF)


def main(argv: list[str]) -> None:
    if len(argv) < 3 or argv[1] != "--":
        print("faultlab-mcp-shim: usage: mcpshim.py RELAY -- COMMAND...", file=sys.stderr)
        os._exit(2)
    relay, command = argv[0], argv[2:]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(relay)
        socket.send_fds(sock, [b"tools\n"], [0, 1, 2])
    except OSError:
        sock.close()
        _fall_back(command)
    stream = sock.makefile("rb", buffering=0)  # one byte a read: nothing read ahead is lost
    answer = _line(stream)
    if answer != b"forked":  # the relay could not fork one: be the server
        sock.close()
        _fall_back(command)
    # The server has the agent's pipes now: holding them here would keep
    # the agent from seeing the server's stdout end.
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    for signum in _FORWARDED:
        signal.signal(signum, lambda number, _frame: _send(sock, f"signal {number}\n"))
    line = _line(stream)
    if line is not None and line.startswith(b"exit "):
        with contextlib.suppress(ValueError):
            _leave(int(line[5:]))
    os._exit(1)  # the lab went away, and with it the server


def _line(stream: io.RawIOBase) -> bytes | None:
    """The relay's next line (short), or None if it closed first."""
    try:
        line: bytes = stream.readline(64)
    except OSError:
        return None
    return line.rstrip(b"\n") if line.endswith(b"\n") else None


def _send(sock: socket.socket, text: str) -> None:
    with contextlib.suppress(OSError):
        sock.sendall(text.encode("ascii"))


if __name__ == "__main__":
    main(sys.argv[1:])
