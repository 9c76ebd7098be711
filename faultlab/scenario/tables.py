# One TOML table of a scenario -> checked Python values, or a `ScenarioError`
# that names the file, the line and the field.
#
# This module owns the reading of single values: their TOML type, the range of
# each integer key, the closed set of each choice key, the unknown-key check
# of a table, and the wording of those errors (how a field path and a value
# are shown).  Which tables exist and how they refer to each other is the
# parser's (`faultlab.scenario.parse`); the line of a field comes from
# `faultlab.scenario.locate`.
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from faultlab.probe import FAULTS, ProbeError, parse_occurrence
from faultlab.scenario.locate import FieldPath, Locator
from faultlab.scenario.model import BACKENDS, BRANCH_CODES, EFFECTS, POLICIES, ScenarioError

__all__ = ["Context", "Table", "join_names", "type_name"]

T = TypeVar("T")

# Integer keys -> inclusive (low, high); None: no upper bound.
_RANGES: dict[str, tuple[int, int | None]] = {
    "max_parallel_tools": (1, 64),
    "latency_ms": (0, 60_000),
    "delay_ms": (0, 60_000),
    "chunk_delay_ms": (0, 60_000),
    "repeat": (1, 100_000),
    "chunks": (1, None),
    "chunk_size": (1, None),
}
# String keys with a closed set of values -> (what they are called, the values).
_CHOICES: dict[str, tuple[str, Sequence[str]]] = {
    "policy": ("policy", POLICIES),
    "backend": ("backend", BACKENDS),
    "effect": ("effect", EFFECTS),
    "fault": ("fault", FAULTS),
    "when": ("error code", BRANCH_CODES),
}
# A key shown unquoted in a field path: a TOML bare key.
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_TOML_NAMES: dict[type, str] = {
    bool: "boolean", int: "integer", float: "float", str: "string", dict: "table", list: "array",
}  # fmt: skip


def _show(path: FieldPath) -> str:
    shown = ""
    for part in path:
        if isinstance(part, int):
            shown += f"[{part}]"
        else:
            key = part if _BARE_KEY.fullmatch(part) else json.dumps(part, ensure_ascii=False)
            shown += f".{key}" if shown else key
    return shown


def type_name(value: object) -> str:
    """The TOML name of `value`'s type ("integer", "table", ..., or e.g. "date")."""
    return _TOML_NAMES.get(type(value), type(value).__name__)  # or date, time, datetime


def _describe(value: object) -> str:
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"string {value[:40]!r}" + ("..." if len(value) > 40 else "")
    if isinstance(value, int | float):
        return f"{type_name(value)} {value}"
    return type_name(value)


def join_names(names: Iterable[str]) -> str:
    """`names` for a message: comma-separated, or "none"."""
    return ", ".join(names) or "none"


class Context:
    """The file being parsed: builds errors that name file, line and field."""

    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self._text = text
        self._locator: Locator | None = None
        self.streamed = 0  # characters of streamed text so far (limits.MAX_TOTAL_TEXT_CHARS)

    def error(
        self, at: FieldPath, problem: str, *, line_at: FieldPath | None = None
    ) -> ScenarioError:
        if self._locator is None:
            self._locator = Locator(self._text)
        line = self._locator.line_of(at if line_at is None else line_at)
        return ScenarioError(self.path, _show(at), problem, line)

    def check_type(self, at: FieldPath, value: object, kind: type[T]) -> T:
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise self.error(at, f"expected {_TOML_NAMES[kind]}, got {_describe(value)}")
        return value

    def check_range(self, at: FieldPath, value: int, low: int, high: int | None) -> int:
        if high is None and value < low:
            raise self.error(at, f"must be >= {low}, got {value}")
        if high is not None and not low <= value <= high:
            raise self.error(at, f"must be between {low} and {high}, got {value}")
        return value

    def check_tool(self, at: FieldPath, name: str, tools: Sequence[str]) -> str:
        if name not in tools:
            raise self.error(at, f"unknown tool {name!r} (tools: {join_names(tools)})")
        return name

    def occurrence(self, at: FieldPath, text: str) -> tuple[str, int]:
        try:
            return parse_occurrence(text)
        except ProbeError as exc:
            raise self.error(at, str(exc)) from None


class Table:
    """One TOML table at `path`, with its keys checked against `allowed`."""

    def __init__(self, ctx: Context, path: FieldPath, data: object, allowed: Sequence[str]) -> None:
        self.ctx = ctx
        self.path = path
        self.data: dict[str, Any] = ctx.check_type(path, data, dict)
        for key in self.data:
            if key not in allowed:
                problem = f"unknown key {key!r} (allowed: {', '.join(allowed)})"
                raise ctx.error((*path, key), problem)

    def at(self, *key: str | int) -> FieldPath:
        return (*self.path, *key)

    def get(self, key: str, kind: type[T]) -> T | None:
        if key not in self.data:
            return None
        return self.ctx.check_type(self.at(key), self.data[key], kind)

    def require(self, key: str, kind: type[T]) -> T:
        value = self.get(key, kind)
        if value is None:
            raise self.ctx.error(self.at(key), "required key is missing", line_at=self.path)
        return value

    def string(self, key: str, default: str) -> str:
        value = self.get(key, str)
        return default if value is None else value

    def boolean(self, key: str, default: bool = False) -> bool:
        value = self.get(key, bool)
        return default if value is None else value

    def optional_integer(self, key: str) -> int | None:
        value = self.get(key, int)
        if value is None or key not in _RANGES:
            return value
        return self.ctx.check_range(self.at(key), value, *_RANGES[key])

    def integer(self, key: str, default: int) -> int:
        value = self.optional_integer(key)
        return default if value is None else value

    def choice(self, key: str, default: str | None = None) -> str:
        value = self.require(key, str) if default is None else self.string(key, default)
        label, valid = _CHOICES[key]
        if value not in valid:
            problem = f"unknown {label} {value!r} (valid: {join_names(valid)})"
            raise self.ctx.error(self.at(key), problem)
        return value

    def tables(self, key: str, allowed: Sequence[str], *, required: bool = False) -> list[Table]:
        items = self.require(key, list) if required else (self.get(key, list) or [])
        return [Table(self.ctx, self.at(key, i), item, allowed) for i, item in enumerate(items)]

    def strings(self, key: str) -> list[tuple[FieldPath, str]] | None:
        items = self.get(key, list)
        if items is None:
            return None
        paths = [self.at(key, i) for i in range(len(items))]
        return [(p, self.ctx.check_type(p, v, str)) for p, v in zip(paths, items, strict=True)]
