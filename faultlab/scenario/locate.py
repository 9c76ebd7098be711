# Field path -> line of the raw scenario TOML text, for error messages.
#
# This module owns the best-effort line locator: a scan of the raw lines that
# follows `[table]` and `[[array]]` headers and `key = value` lines, so an
# error can name the line a field came from.  It knows nothing of the
# scenario format; `faultlab.scenario.tables` asks it for a field's line when
# it builds an error.
from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["FieldPath", "Locator", "locate"]

FieldPath = tuple[str | int, ...]

_KEY_PART = re.compile(r"""[ \t]*(?:([A-Za-z0-9_-]+)|"((?:[^"\\\n]|\\.)*)"|'([^'\n]*)')[ \t]*""")
_STRINGS = re.compile(r""""(?:[^"\\\n]|\\.)*"|'[^'\n]*'""")


class Locator:
    """Maps field paths to line numbers by scanning the raw TOML lines.

    It tracks `[table]` and `[[array]]` headers (with per-array occurrence
    counts, so `[[turns.steps]]` under the second `[[turns]]` is
    `turns[1].steps[0]`) and `key = value` lines, including dotted keys.  A
    field inside a value (an inline table, or an array written on one or more
    lines) is found at the line of its key.  Whatever the scan cannot follow
    is left out, so a lookup gives None rather than a wrong line.
    """

    def __init__(self, text: str) -> None:
        self._keys: dict[FieldPath, int] = {}
        self._tables: dict[FieldPath, int] = {}
        self._scan(text.splitlines())

    def line_of(self, path: FieldPath) -> int | None:
        if not path:
            return None
        for end in range(len(path), 0, -1):
            if path[:end] in self._keys:
                return self._keys[path[:end]]
        if path in self._tables:
            return self._tables[path]
        entries = (*self._keys.items(), *self._tables.items())
        return min((n for p, n in entries if p[: len(path)] == path), default=None)

    def _scan(self, lines: Sequence[str]) -> None:
        table: FieldPath | None = ()
        counts: dict[FieldPath, int] = {}
        open_string: str | None = None  # closing quotes of a multi-line string
        depth = 0  # brackets left open by a multi-line value
        for number, raw in enumerate(lines, 1):
            if open_string is not None:
                if raw.count(open_string) % 2:
                    open_string = None
                continue
            if depth > 0:
                depth += _bracket_balance(raw)
                continue
            line = raw.lstrip()
            if line.startswith("["):
                table = _header_path(line, counts)
                if table is not None:
                    self._tables.setdefault(table, number)
                continue
            parsed = _read_key(line, 0)
            if parsed is None or not line.startswith("=", parsed[1]):
                continue
            if table is not None:
                self._keys.setdefault(table + tuple(parsed[0]), number)
            value = line[parsed[1] + 1 :].strip()
            open_string = _opens_multiline_string(value)
            depth = _bracket_balance(value)


def locate(text: str, path: FieldPath) -> int | None:
    """Best-effort line of `path` (e.g. `("tools", "deploy", "latency_ms")`) in `text`."""
    return Locator(text).line_of(path)


def _read_key(line: str, pos: int) -> tuple[list[str], int] | None:
    """Read a (dotted) key at `pos`; return its parts and where it ends."""
    parts: list[str] = []
    while True:
        match = _KEY_PART.match(line, pos)
        if match is None:
            return None
        # An escaped quoted key is kept as written: it then matches no field.
        parts.append(next(p for p in match.groups() if p is not None))
        pos = match.end()
        if not line.startswith(".", pos):
            return parts, pos
        pos += 1


def _header_path(line: str, counts: dict[FieldPath, int]) -> FieldPath | None:
    is_array = line.startswith("[[")
    parsed = _read_key(line, 2 if is_array else 1)
    if parsed is None or not line.startswith("]]" if is_array else "]", parsed[1]):
        return None
    path: FieldPath = ()
    for i, part in enumerate(parsed[0]):
        path += (part,)
        if is_array and i == len(parsed[0]) - 1:
            counts[path] = counts.get(path, 0) + 1
            path += (counts[path] - 1,)
        elif path in counts:
            path += (counts[path] - 1,)
    return path


def _opens_multiline_string(value: str) -> str | None:
    for quotes in ('"""', "'''"):
        if value.startswith(quotes) and value.count(quotes) == 1:
            return quotes
    return None


def _bracket_balance(value: str) -> int:
    code = _STRINGS.sub("", value).split("#", 1)[0]
    return code.count("[") + code.count("{") - code.count("]") - code.count("}")
