# The size limits of a scenario (docs/cli.md, "Limits"), checked while it is
# read so that no input can exhaust the loader or the runtime behind it:
#
# - nesting: arrays and tables may be nested at most MAX_DEPTH deep.  The
#   TOML reader recurses once per level (a RecursionError near 330 levels)
#   and the runtime's JSON encoder gives up past 254, so a deep value is
#   refused by the raw scan `too_deep_line` before the reader sees it, and by
#   `deepest` on what the reader built (dotted keys and headers nest too);
# - streamed text: `text` x `repeat` is at most MAX_TEXT_CHARS per step or
#   branch and MAX_TOTAL_TEXT_CHARS per scenario, checked before the text is
#   built (a 100 KB text repeated 100000 times would be 10 GB).
# The file's own size is bounded where it is read (faultlab.userfiles).
from __future__ import annotations

import re
from typing import Any

__all__ = ["MAX_DEPTH", "MAX_TEXT_CHARS", "MAX_TOTAL_TEXT_CHARS", "deepest", "too_deep_line"]

MAX_DEPTH = 32
MAX_TEXT_CHARS = 1_000_000
MAX_TOTAL_TEXT_CHARS = 10_000_000

_TOKEN = re.compile(r"\"\"\"|'''|[\\\"'#\[\]{}\n]")


def too_deep_line(text: str, limit: int = MAX_DEPTH) -> int | None:
    """The line where brackets outside strings and comments first nest more
    than `limit` deep, or None.  A scan of the raw text, so it answers before
    the recursive TOML reader runs; it needs no exactness beyond that."""
    if text.count("[") + text.count("{") <= limit:
        return None
    depth, line, state, pos = 0, 1, "", 0
    while (match := _TOKEN.search(text, pos)) is not None:
        token, pos = match.group(), match.end()
        if token == "\n":
            line += 1
            if state in ("#", '"', "'"):
                state = ""  # comments and one-line strings end at the line's end
        elif state == "":
            if token in ("[", "{"):
                depth += 1
                if depth > limit:
                    return line
            elif token in ("]", "}"):
                depth = max(0, depth - 1)
            elif token != "\\":
                state = token  # a string or a comment opens
        elif state in ('"', '"""'):
            if token == "\\":
                line += text.startswith("\n", pos)
                pos += 1  # the escaped character
            elif token == state or (state == '"' and token == '"""'):
                state = ""
        elif state in ("'", "'''") and (token == state or (state == "'" and token == "'''")):
            state = ""
    return None


def deepest(data: dict[str, Any]) -> tuple[tuple[str | int, ...], int]:
    """The path of the most deeply nested value of `data` and its depth
    (a key of the top table is at depth 1); iterative, so any depth works."""
    best: tuple[tuple[str | int, ...], int] = ((), 0)
    stack: list[tuple[tuple[str | int, ...], object]] = [((), data)]
    while stack:
        path, value = stack.pop()
        items: list[tuple[str | int, object]]
        if isinstance(value, dict):
            items = list(value.items())
        elif isinstance(value, list):
            items = list(enumerate(value))
        else:
            continue
        for key, item in items:
            child = (*path, key)
            if len(child) > best[1]:
                best = (child, len(child))
            stack.append((child, item))
    return best
