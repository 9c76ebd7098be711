# strace's text, as `syscalls.traced_argv` makes it print (-f -y -xx): the
# completed calls in completion order (a call split across threads by
# "<unfinished ...>" / "<... resumed>" is joined), each call's arguments split
# at the top level, and the tokens in them (hex strings, fds with the path
# -y gives them, integers).  What the calls mean is filemodel.py's business.
from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["Call", "Started", "as_bytes", "as_fd", "as_int", "as_path", "calls"]

_LINE = re.compile(r"^(\d+)\s+(.*)$")
_CALL = re.compile(r"^(\w+)\((.*)\)\s+=\s+(-?\d+|\?|0x[0-9a-fA-F]+)(?:<([^>]*)>)?(.*)$")
_FD = re.compile(r"^(-?\d+|AT_FDCWD)(?:<([^>]*)>)?(?:\(deleted\))?$")  # -y: an unlinked file
_QUOTED = re.compile(r'"((?:\\x[0-9a-fA-F]{2})*)"')


@dataclass(frozen=True, slots=True)
class Call:
    """One completed system call: the thread that made it, its name, its
    top-level arguments as printed, its result (-1 when strace printed "?":
    the thread died inside it), and the path -y printed for a returned fd."""

    pid: str
    name: str
    args: tuple[str, ...]
    result: int
    returned_path: str | None


@dataclass(frozen=True, slots=True)
class Started:
    """A call strace printed as "<unfinished ...>": only its name and
    arguments so far (a clone's flags are known before its child runs)."""

    pid: str
    name: str
    text: str


def calls(text: str) -> Iterator[Call | Started]:
    """Every call of ``text`` in completion order; a call still unfinished
    when another thread's line comes is also given once as `Started`."""
    unfinished: dict[str, str] = {}
    for raw in text.splitlines():
        line = _LINE.match(raw)
        if line is None:
            continue
        pid, rest = line.groups()
        if rest.endswith("<unfinished ...>"):
            head = rest[: -len("<unfinished ...>")].rstrip()
            unfinished[pid] = head
            name, _, args = head.partition("(")
            yield Started(pid, name, args)
            continue
        if rest.startswith("<..."):
            head = unfinished.pop(pid, None)
            _, _, tail = rest.partition("resumed>")
            if head is None:
                continue
            rest = head + tail
        call = _CALL.match(rest)
        if call is None:
            continue
        name, args, result, rpath, _tail = call.groups()
        value = -1 if result == "?" else int(result, 0)
        resolved = None if rpath is None else os.fsdecode(as_bytes(f'"{rpath}"'))
        yield Call(pid, name, tuple(_split(args)), value, resolved)


def as_bytes(token: str) -> bytes:
    """The bytes of every quoted string in ``token`` (a writev's iovecs too)."""
    out = bytearray()
    for quoted in _QUOTED.findall(token):
        out += bytes.fromhex(quoted.replace("\\x", ""))
    return bytes(out)


def as_fd(token: str) -> tuple[int, str | None]:
    """A descriptor argument: its number (AT_FDCWD: -100) and the path -y gave."""
    match = _FD.match(token.strip())
    if match is None:
        return -1, None
    number = -100 if match.group(1) == "AT_FDCWD" else int(match.group(1))
    path = match.group(2)
    return number, None if path is None else os.fsdecode(as_bytes(f'"{path}"') or b"") or None


def as_path(token: str, base: str | None) -> str | None:
    """A path argument, made absolute against ``base`` (a dirfd's path)."""
    token = token.strip()
    if not token.startswith('"'):
        return None
    path = os.fsdecode(as_bytes(token))
    if not os.path.isabs(path) and base is not None:
        path = os.path.join(base, path)
    return os.path.normpath(path) if os.path.isabs(path) else None


def as_int(token: str) -> int:
    """An integer argument (decimal or 0x hex); 0 when it is not one."""
    try:
        return int(token.strip(), 0)
    except ValueError:
        return 0


def _split(args: str) -> list[str]:
    """Top-level comma-separated arguments (writev's ``[{...}, ...]`` stays one)."""
    parts: list[str] = []
    depth = 0
    start = 0
    quoted = False
    for index, char in enumerate(args):
        if char == '"':
            quoted = not quoted
        elif quoted:
            continue
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(args[start:index].strip())
            start = index + 1
    if args.strip():
        parts.append(args[start:].strip())
    return parts
