# Scenario TOML text -> validated, frozen `Scenario` (docs/scenario-format.md).
#
# This module owns the checking of a scenario file: the allowed keys, types and
# ranges of every table, the cross-references between tools, steps and
# expectations, the chunking of streamed text, and a best-effort locator that
# maps a field path back to the line of the raw text it came from.  Every
# problem is raised as a `ScenarioError`; the public entry points live in
# `faultlab.scenario`.
from __future__ import annotations

import copy
import itertools
import json
import math
import re
import tomllib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

from faultlab.probe import FAULTS, ProbeError, parse_occurrence
from faultlab.scenario.model import (
    BACKENDS,
    BRANCH_CODES,
    EFFECTS,
    FORMAT_VERSION,
    POLICIES,
    Branch,
    Effect,
    Expectation,
    NestedCall,
    Policy,
    Scenario,
    ScenarioError,
    Step,
    ToolCallSpec,
    ToolSpec,
    Turn,
)

__all__ = ["SCENARIO_NAME", "chunk_text", "load_scenario", "locate", "parse", "parse_scenario"]

T = TypeVar("T")
FieldPath = tuple[str | int, ...]

# Codes of the synthetic results crash repair adds (`[[expect]] repair`).
REPAIR_CODES = ("TOOL_NOT_STARTED", "TOOL_OUTCOME_UNKNOWN")

_CONTENT_KEYS = ("text", "repeat", "chunks", "chunk_size", "tool_calls")
_TOP_KEYS = (
    "format", "name", "description", "policy", "backend", "max_parallel_tools",
    "resume_prompt", "boundaries", "tools", "turns", "expect",
)  # fmt: skip
_TOOL_KEYS = (
    "read_only", "idempotent", "parallel_safe", "accepts_idempotency_key", "effect",
    "latency_ms", "result", "fails", "observes", "calls",
)  # fmt: skip
_TURN_KEYS = ("user", "steps")
_STEP_KEYS = (*_CONTENT_KEYS, "delay_ms", "chunk_delay_ms", "branches")
_BRANCH_KEYS = ("when", "tool", *_CONTENT_KEYS)
_CALL_KEYS = ("tool", "arguments")
_EXPECT_KEYS = ("at", "fault", "repair", "ledger")

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
SCENARIO_NAME = re.compile(r"[A-Za-z0-9._-]+")
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]+")
_TOML_ERROR = re.compile(
    r"^(?P<msg>.*) \(at (?:line (?P<line>\d+), column (?P<col>\d+)|end of document)\)$"
)
_TOML_NAMES: dict[type, str] = {
    bool: "boolean", int: "integer", float: "float", str: "string", dict: "table", list: "array",
}  # fmt: skip
_NO_TOOL_WAIT = "the model would be asked for a step that does not exist"


def parse(text: str, *, path: str) -> Scenario:
    """Parse and validate scenario TOML `text` read from `path`."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _syntax_error(path, text, str(exc)) from None
    return _scenario(_Context(path, text), data)


def _syntax_error(path: str, text: str, message: str) -> ScenarioError:
    match = _TOML_ERROR.match(message)
    if match is None:
        return ScenarioError(path, "", f"invalid TOML: {message}")
    if match["line"] is None:  # tomllib reports "at end of document"
        last = max(1, len(text.splitlines()))
        return ScenarioError(path, "", f"invalid TOML: {match['msg']} (at end of document)", last)
    problem = f"invalid TOML: {match['msg']} (column {match['col']})"
    return ScenarioError(path, "", problem, int(match["line"]))


# --- chunking ---------------------------------------------------------------

_WORD = re.compile(r"\s*\S+\s*|\s+")


def chunk_text(
    text: str, *, chunks: int | None = None, chunk_size: int | None = None
) -> tuple[str, ...]:
    """Split `text` into stream chunks; joining them gives `text` back.

    Default: split after each run of whitespace.  `chunks=N`: N near-equal pieces
    (at most one per character).  `chunk_size=K`: pieces of K characters.
    """
    if not text:
        return ()
    if chunk_size is not None:
        return tuple(text[i : i + chunk_size] for i in range(0, len(text), chunk_size))
    if chunks is not None:
        count = min(chunks, len(text))
        small, extra = divmod(len(text), count)
        bounds = [i * small + min(i, extra) for i in range(count + 1)]
        return tuple(text[a:b] for a, b in itertools.pairwise(bounds))
    return tuple(_WORD.findall(text))


# --- locating a field path in the raw text ----------------------------------

_KEY_PART = re.compile(r"""[ \t]*(?:([A-Za-z0-9_-]+)|"((?:[^"\\\n]|\\.)*)"|'([^'\n]*)')[ \t]*""")
_STRINGS = re.compile(r""""(?:[^"\\\n]|\\.)*"|'[^'\n]*'""")


class _Locator:
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
    return _Locator(text).line_of(path)


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


# --- reading tables ---------------------------------------------------------


def _show(path: FieldPath) -> str:
    shown = ""
    for part in path:
        if isinstance(part, int):
            shown += f"[{part}]"
        else:
            key = part if _TOOL_NAME.fullmatch(part) else json.dumps(part, ensure_ascii=False)
            shown += f".{key}" if shown else key
    return shown


def _type_name(value: object) -> str:
    return _TOML_NAMES.get(type(value), type(value).__name__)  # or date, time, datetime


def _describe(value: object) -> str:
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"string {value[:40]!r}" + ("..." if len(value) > 40 else "")
    if isinstance(value, int | float):
        return f"{_type_name(value)} {value}"
    return _type_name(value)


def _names(names: Iterable[str]) -> str:
    return ", ".join(names) or "none"


class _Context:
    """The file being parsed: builds errors that name file, line and field."""

    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self._text = text
        self._locator: _Locator | None = None

    def error(
        self, at: FieldPath, problem: str, *, line_at: FieldPath | None = None
    ) -> ScenarioError:
        if self._locator is None:
            self._locator = _Locator(self._text)
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
            raise self.error(at, f"unknown tool {name!r} (tools: {_names(tools)})")
        return name

    def occurrence(self, at: FieldPath, text: str) -> tuple[str, int]:
        try:
            return parse_occurrence(text)
        except ProbeError as exc:
            raise self.error(at, str(exc)) from None


class _Table:
    """One TOML table at `path`, with its keys checked against `allowed`."""

    def __init__(
        self, ctx: _Context, path: FieldPath, data: object, allowed: Sequence[str]
    ) -> None:
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
            problem = f"unknown {label} {value!r} (valid: {_names(valid)})"
            raise self.ctx.error(self.at(key), problem)
        return value

    def tables(self, key: str, allowed: Sequence[str], *, required: bool = False) -> list[_Table]:
        items = self.require(key, list) if required else (self.get(key, list) or [])
        return [_Table(self.ctx, self.at(key, i), item, allowed) for i, item in enumerate(items)]

    def strings(self, key: str) -> list[tuple[FieldPath, str]] | None:
        items = self.get(key, list)
        if items is None:
            return None
        paths = [self.at(key, i) for i in range(len(items))]
        return [(p, self.ctx.check_type(p, v, str)) for p, v in zip(paths, items, strict=True)]


# --- the scenario -----------------------------------------------------------


def _scenario(ctx: _Context, data: dict[str, Any]) -> Scenario:
    top = _Table(ctx, (), data, _TOP_KEYS)
    if (version := top.integer("format", FORMAT_VERSION)) != FORMAT_VERSION:
        raise ctx.error(("format",), f"unsupported format {version} (supported: {FORMAT_VERSION})")
    name = top.require("name", str)
    if not SCENARIO_NAME.fullmatch(name):
        problem = f"name must be non-empty letters, digits, '-', '_', '.'; got {name!r}"
        raise ctx.error(("name",), problem)
    description = top.string("description", "")
    policy = cast(Policy, top.choice("policy", "semantic"))
    backend = top.choice("backend", "jsonl")
    max_parallel_tools = top.integer("max_parallel_tools", 4)
    resume_prompt = top.string("resume_prompt", "Continue.")
    boundaries = top.strings("boundaries") or []
    for at, text in boundaries:
        ctx.occurrence(at, text)
    tools = _tools(top)
    return Scenario(
        name=name,
        description=description,
        path=ctx.path,
        turns=_turns(top, tools),
        tools=tools,
        policy=policy,
        backend=backend,
        max_parallel_tools=max_parallel_tools,
        resume_prompt=resume_prompt,
        boundaries=tuple(text for _, text in boundaries),
        expectations=tuple(_expectation(t, tools) for t in top.tables("expect", _EXPECT_KEYS)),
    )


def _tools(top: _Table) -> tuple[ToolSpec, ...]:
    raw = top.get("tools", dict) or {}
    names = tuple(raw)
    for name in names:
        if not _TOOL_NAME.fullmatch(name):
            problem = f"tool name must be non-empty letters, digits, '_', '-'; got {name!r}"
            raise top.ctx.error(("tools", name), problem)
    tools = tuple(_tool(n, _Table(top.ctx, ("tools", n), raw[n], _TOOL_KEYS), names) for n in names)
    _check_no_cycle(top.ctx, tools)
    return tools


def _tool(name: str, t: _Table, names: Sequence[str]) -> ToolSpec:
    read_only = t.boolean("read_only")
    effect = cast(Effect, t.choice("effect", "none"))
    if read_only and effect == "ledger":
        raise t.ctx.error(t.at("effect"), 'a read_only tool cannot have effect = "ledger"')
    observes = t.get("observes", str)
    if observes is not None:
        t.ctx.check_tool(t.at("observes"), observes, names)
    return ToolSpec(
        name=name,
        read_only=read_only,
        idempotent=t.boolean("idempotent"),
        parallel_safe=t.boolean("parallel_safe"),
        accepts_idempotency_key=t.boolean("accepts_idempotency_key"),
        effect=effect,
        latency_ms=t.integer("latency_ms", 0),
        result=t.string("result", "ok"),
        fails=t.boolean("fails"),
        observes=observes,
        calls=tuple(NestedCall(tool, args) for tool, args in _calls(t, "calls", names)),
    )


def _calls(t: _Table, key: str, names: Sequence[str]) -> list[tuple[str, dict[str, Any]]]:
    calls = []
    for call in t.tables(key, _CALL_KEYS):
        tool = t.ctx.check_tool(call.at("tool"), call.require("tool", str), names)
        arguments = call.get("arguments", dict) or {}
        _check_json(t.ctx, call.at("arguments"), arguments)
        calls.append((tool, copy.deepcopy(arguments)))
    return calls


def _check_json(ctx: _Context, at: FieldPath, value: object) -> None:
    """Arguments are logged as JSON: no dates or times, no nan or inf."""
    if isinstance(value, dict):
        for key, item in value.items():
            _check_json(ctx, (*at, key), item)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_json(ctx, (*at, i), item)
    elif isinstance(value, float) and not math.isfinite(value):
        raise ctx.error(at, f"{value} cannot be sent as JSON")
    elif not isinstance(value, str | int | float):
        raise ctx.error(at, f"a {_type_name(value)} cannot be sent as JSON")


def _check_no_cycle(ctx: _Context, tools: Sequence[ToolSpec]) -> None:
    callees = {spec.name: [call.tool for call in spec.calls] for spec in tools}
    done: set[str] = set()

    def visit(stack: list[str]) -> None:
        caller = stack[-1]
        for i, callee in enumerate(callees[caller]):
            if callee in stack:
                cycle = " -> ".join([*stack[stack.index(callee) :], callee])
                problem = f"nested calls form a cycle: {cycle}"
                raise ctx.error(("tools", caller, "calls", i, "tool"), problem)
            if callee not in done:
                visit([*stack, callee])
        done.add(caller)

    for spec in tools:
        if spec.name not in done:
            visit([spec.name])


def _turns(top: _Table, tools: Sequence[ToolSpec]) -> tuple[Turn, ...]:
    tables = top.tables("turns", _TURN_KEYS, required=True)
    if not tables:
        raise top.ctx.error(("turns",), "at least one turn is required")
    return tuple(_turn(t, tools) for t in tables)


def _turn(t: _Table, tools: Sequence[ToolSpec]) -> Turn:
    user = t.require("user", str)
    tables = t.tables("steps", _STEP_KEYS, required=True)
    if not tables:
        raise t.ctx.error(t.at("steps"), "at least one step is required")
    names = tuple(spec.name for spec in tools)
    steps = tuple(_step(s, names) for s in tables)
    for i, step in enumerate(steps):
        for j, branch in enumerate(step.branches):
            previous = steps[i - 1] if i > 0 else None
            _check_branch(t.ctx, t.at("steps", i, "branches", j), branch, previous, tools)
    _check_last_step(t.ctx, t.at("steps", len(steps) - 1), steps[-1])
    return Turn(user=user, steps=steps)


def _step(t: _Table, names: Sequence[str]) -> Step:
    chunks, tool_calls = _content(t, names, "step")
    return Step(
        chunks=chunks,
        tool_calls=tool_calls,
        delay_ms=t.integer("delay_ms", 0),
        chunk_delay_ms=t.integer("chunk_delay_ms", 0),
        branches=tuple(_branch(b, names) for b in t.tables("branches", _BRANCH_KEYS)),
    )


def _branch(t: _Table, names: Sequence[str]) -> Branch:
    when = t.choice("when")
    tool = t.get("tool", str)
    if tool is not None:
        t.ctx.check_tool(t.at("tool"), tool, names)
    chunks, tool_calls = _content(t, names, "branch")
    return Branch(when=when, tool=tool, chunks=chunks, tool_calls=tool_calls)


def _content(
    t: _Table, names: Sequence[str], what: str
) -> tuple[tuple[str, ...], tuple[ToolCallSpec, ...]]:
    """The streamed chunks and tool calls of a step or branch."""
    text = t.string("text", "") * t.integer("repeat", 1)
    chunks, chunk_size = t.optional_integer("chunks"), t.optional_integer("chunk_size")
    if chunks is not None and chunk_size is not None:
        raise t.ctx.error(t.at("chunk_size"), "chunk_size and chunks cannot both be given")
    tool_calls = tuple(ToolCallSpec(tool, args) for tool, args in _calls(t, "tool_calls", names))
    if not text and not tool_calls:
        raise t.ctx.error(t.path, f"a {what} must have text or tool_calls")
    return chunk_text(text, chunks=chunks, chunk_size=chunk_size), tool_calls


def _tools_called(step: Step) -> tuple[str, ...]:
    contents: list[Step | Branch] = [step, *step.branches]
    return tuple(dict.fromkeys(call.tool for c in contents for call in c.tool_calls))


def _check_branch(
    ctx: _Context, at: FieldPath, branch: Branch, previous: Step | None, tools: Sequence[ToolSpec]
) -> None:
    """Reject a branch that can never match (docs/scenario-format.md)."""
    if previous is None:
        problem = "can never match: it is on the first step of its turn, so no tool was called"
        raise ctx.error(at, problem)
    called = _tools_called(previous)
    if not called:
        raise ctx.error(at, "can never match: the previous step calls no tool")
    if branch.tool is not None and branch.tool not in called:
        problem = (
            f"can never match: the previous step never calls {branch.tool!r}"
            f" (it calls: {_names(called)})"
        )
        raise ctx.error((*at, "tool"), problem)
    if branch.when == "TOOL_FAILED":
        watched = (branch.tool,) if branch.tool is not None else called
        if not any(spec.fails for spec in tools if spec.name in watched):
            problem = f"TOOL_FAILED can never match: no tool of {_names(watched)} has fails = true"
            raise ctx.error((*at, "when"), problem)


def _check_last_step(ctx: _Context, at: FieldPath, step: Step) -> None:
    if step.tool_calls:
        problem = f"the last step of a turn cannot call tools: {_NO_TOOL_WAIT}"
        raise ctx.error((*at, "tool_calls"), problem)
    for j, branch in enumerate(step.branches):
        if branch.tool_calls:
            problem = f"a branch of the last step of a turn cannot call tools: {_NO_TOOL_WAIT}"
            raise ctx.error((*at, "branches", j, "tool_calls"), problem)


def _expectation(t: _Table, tools: Sequence[ToolSpec]) -> Expectation:
    name, n = t.ctx.occurrence(t.at("at"), t.require("at", str))
    fault = t.choice("fault", "sigkill")
    repair = t.strings("repair")
    for at, code in repair or []:
        if code not in REPAIR_CODES:
            raise t.ctx.error(at, f"unknown repair code {code!r} (valid: {_names(REPAIR_CODES)})")
    ledger = t.get("ledger", dict)
    for tool, count in (ledger or {}).items():
        at = t.at("ledger", tool)
        t.ctx.check_tool(at, tool, [spec.name for spec in tools])
        t.ctx.check_range(at, t.ctx.check_type(at, count, int), 0, None)
    return Expectation(
        at=f"{name}#{n}",
        fault=fault,
        repair=None if repair is None else tuple(code for _, code in repair),
        ledger=None if ledger is None else dict(ledger),
    )


def parse_scenario(text: str, *, path: str = "<scenario>") -> Scenario:
    """Parse and validate scenario TOML text; raise `ScenarioError` on any problem."""
    if not isinstance(text, str):
        raise TypeError(f"text must be str, not {type(text).__name__}")
    return parse(text, path=path)


def load_scenario(path: str | Path) -> Scenario:
    """Read a scenario file; raise `ScenarioError` when it is missing or malformed."""
    shown = str(path)
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise ScenarioError(shown, "", "no such file") from None
    except IsADirectoryError:
        raise ScenarioError(shown, "", "is a directory, not a scenario file") from None
    except OSError as exc:
        raise ScenarioError(shown, "", f"cannot read: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScenarioError(shown, "", f"not UTF-8 (byte offset {exc.start})") from None
    return parse_scenario(text, path=shown)
