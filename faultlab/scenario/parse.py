# Scenario TOML text -> validated, frozen `Scenario` (docs/scenario-format.md).
#
# This module owns the entry points (`parse_scenario`, `load_scenario`) and
# the format's structure: which keys every table allows, which are required,
# and the cross-references between tools, steps, branches and expectations
# (unknown tools, call cycles, branches that can never match).  Reading and
# checking single values is `faultlab.scenario.tables`'s, splitting streamed
# text `faultlab.scenario.chunking`'s.  Every problem is raised as a
# `ScenarioError`; the public entry points are re-exported by
# `faultlab.scenario`.
from __future__ import annotations

import copy
import math
import re
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from faultlab.scenario.chunking import chunk_text
from faultlab.scenario.limits import (
    MAX_DEPTH,
    MAX_TEXT_CHARS,
    MAX_TOTAL_TEXT_CHARS,
    deepest,
    too_deep_line,
)
from faultlab.scenario.locate import FieldPath
from faultlab.scenario.model import (
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
from faultlab.scenario.tables import Context, Table, join_names, type_name
from faultlab.userfiles import MAX_SCENARIO_BYTES, UserFileError, read_bytes

__all__ = ["SCENARIO_NAME", "load_scenario", "parse", "parse_scenario"]

# Codes of the synthetic results crash repair adds (`[[expect]] repair`).
REPAIR_CODES = ("TOOL_NOT_STARTED", "TOOL_OUTCOME_UNKNOWN")

_CONTENT_KEYS = ("text", "repeat", "chunks", "chunk_size", "tool_calls")
_TOP_KEYS = (
    "format", "name", "description", "policy", "backend", "max_parallel_tools",
    "resume_prompt", "boundaries", "tools", "turns", "expect",
)  # fmt: skip
_TOOL_KEYS = (
    "read_only", "idempotent", "parallel_safe", "accepts_idempotency_key", "effect",
    "latency_ms", "result", "fails", "observes", "calls", "retry_if",
    "returns_after", "returns_after_start",
)  # fmt: skip
_TURN_KEYS = ("user", "steps")
_STEP_KEYS = (*_CONTENT_KEYS, "delay_ms", "chunk_delay_ms", "branches")
_BRANCH_KEYS = ("when", "tool", *_CONTENT_KEYS)
_CALL_KEYS = ("tool", "arguments")
_EXPECT_KEYS = ("at", "fault", "repair", "ledger", "policies")
# Faults whose cases check a scenario's [[expect]], and the boundaries their
# cases are planned at (None: every boundary).  An expectation elsewhere could
# never be checked, so it is an error at load rather than a silent no-op.
_EXPECT_FAULTS: dict[str, tuple[str, ...] | None] = {
    "sigkill": None, "power-loss": ("flush/written",), "torn-write": ("flush/written",),
}  # fmt: skip

SCENARIO_NAME = re.compile(r"[A-Za-z0-9._-]+")
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]+")
_TOML_ERROR = re.compile(
    r"^(?P<msg>.*) \(at (?:line (?P<line>\d+), column (?P<col>\d+)|end of document)\)$"
)
_NO_TOOL_WAIT = "the model would be asked for a step that does not exist"
_BOM = "\ufeff"
_TOO_DEEP = f"arrays and tables are nested more than {MAX_DEPTH} levels deep (the limit)"


def parse(text: str, *, path: str) -> Scenario:
    """Parse and validate scenario TOML `text` read from `path`."""
    text = text.removeprefix(_BOM)  # editors on Windows write one; TOML allows none
    if not text.strip():
        raise ScenarioError(path, "", "the file is empty (a scenario needs a name and a turn)")
    if (line := too_deep_line(text)) is not None:
        raise ScenarioError(path, "", _TOO_DEEP, line)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _syntax_error(path, text, str(exc)) from None
    except RecursionError:  # the scan above bounds the recursion; kept as a net
        raise ScenarioError(path, "", _TOO_DEEP) from None
    ctx = Context(path, text)
    deep, depth = deepest(data)
    if depth > MAX_DEPTH:
        raise ctx.error(deep[: MAX_DEPTH + 1], _TOO_DEEP)
    return _scenario(ctx, data)


def _syntax_error(path: str, text: str, message: str) -> ScenarioError:
    match = _TOML_ERROR.match(message)
    if match is None:
        return ScenarioError(path, "", f"invalid TOML: {message}")
    if match["line"] is None:  # tomllib reports "at end of document"
        last = max(1, len(text.splitlines()))
        return ScenarioError(path, "", f"invalid TOML: {match['msg']} (at end of document)", last)
    problem = f"invalid TOML: {match['msg']} (column {match['col']})"
    return ScenarioError(path, "", problem, int(match["line"]))


# --- the scenario -----------------------------------------------------------


def _scenario(ctx: Context, data: dict[str, Any]) -> Scenario:
    top = Table(ctx, (), data, _TOP_KEYS)
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


def _tools(top: Table) -> tuple[ToolSpec, ...]:
    raw = top.get("tools", dict) or {}
    names = tuple(raw)
    for name in names:
        if not _TOOL_NAME.fullmatch(name):
            problem = f"tool name must be non-empty letters, digits, '_', '-'; got {name!r}"
            raise top.ctx.error(("tools", name), problem)
    tools = tuple(_tool(n, Table(top.ctx, ("tools", n), raw[n], _TOOL_KEYS), names) for n in names)
    _check_no_cycle(top.ctx, tools)
    return tools


def _tool(name: str, t: Table, names: Sequence[str]) -> ToolSpec:
    read_only = t.boolean("read_only")
    effect = cast(Effect, t.choice("effect", "none"))
    if read_only and effect == "ledger":
        raise t.ctx.error(t.at("effect"), 'a read_only tool cannot have effect = "ledger"')
    observes = t.get("observes", str)
    if observes is not None:
        t.ctx.check_tool(t.at("observes"), observes, names)
    retry_if = t.get("retry_if", dict)
    if retry_if is not None:
        if not retry_if:
            problem = ("name at least one argument (an empty table would reject every call, "
                       "and the model would call forever)")  # fmt: skip
            raise t.ctx.error(t.at("retry_if"), problem)
        _check_json(t.ctx, t.at("retry_if"), retry_if)
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
        retry_if=copy.deepcopy(retry_if),
        returns_after=_returns_after(t, "returns_after", name, names),
        returns_after_start=_returns_after(t, "returns_after_start", name, names),
    )


def _returns_after(t: Table, key: str, name: str, names: Sequence[str]) -> str | None:
    other = t.get(key, str)
    if other is None:
        return None
    other = t.ctx.check_tool(t.at(key), other, names)
    if other == name:
        raise t.ctx.error(t.at(key), "a tool cannot wait for its own body")
    if not t.integer("latency_ms", 0):
        problem = "needs a latency_ms: the longest the body waits for that tool's body"
        raise t.ctx.error(t.at(key), problem)
    if key == "returns_after_start" and t.get("returns_after", str) is not None:
        raise t.ctx.error(t.at(key), "give returns_after or returns_after_start, not both")
    return other


def _calls(t: Table, key: str, names: Sequence[str]) -> list[tuple[str, dict[str, Any]]]:
    calls = []
    for call in t.tables(key, _CALL_KEYS):
        tool = t.ctx.check_tool(call.at("tool"), call.require("tool", str), names)
        arguments = call.get("arguments", dict) or {}
        _check_json(t.ctx, call.at("arguments"), arguments)
        calls.append((tool, copy.deepcopy(arguments)))
    return calls


def _check_json(ctx: Context, at: FieldPath, value: object) -> None:
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
        raise ctx.error(at, f"a {type_name(value)} cannot be sent as JSON")


def _check_no_cycle(ctx: Context, tools: Sequence[ToolSpec]) -> None:
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


def _turns(top: Table, tools: Sequence[ToolSpec]) -> tuple[Turn, ...]:
    tables = top.tables("turns", _TURN_KEYS, required=True)
    if not tables:
        raise top.ctx.error(("turns",), "at least one turn is required")
    return tuple(_turn(t, tools) for t in tables)


def _turn(t: Table, tools: Sequence[ToolSpec]) -> Turn:
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


def _step(t: Table, names: Sequence[str]) -> Step:
    chunks, tool_calls = _content(t, names, "step")
    return Step(
        chunks=chunks,
        tool_calls=tool_calls,
        delay_ms=t.integer("delay_ms", 0),
        chunk_delay_ms=t.integer("chunk_delay_ms", 0),
        branches=tuple(_branch(b, names) for b in t.tables("branches", _BRANCH_KEYS)),
    )


def _branch(t: Table, names: Sequence[str]) -> Branch:
    when = t.choice("when")
    tool = t.get("tool", str)
    if tool is not None:
        t.ctx.check_tool(t.at("tool"), tool, names)
    chunks, tool_calls = _content(t, names, "branch")
    return Branch(when=when, tool=tool, chunks=chunks, tool_calls=tool_calls)


def _content(
    t: Table, names: Sequence[str], what: str
) -> tuple[tuple[str, ...], tuple[ToolCallSpec, ...]]:
    """The streamed chunks and tool calls of a step or branch."""
    text, repeat = t.string("text", ""), t.integer("repeat", 1)
    size = len(text) * repeat
    if size > MAX_TEXT_CHARS:
        problem = (f"text x repeat is {len(text)} x {repeat} = {size} characters, more than "
                   f"the {MAX_TEXT_CHARS} a step or branch may stream (the limit)")
        raise t.ctx.error(t.at("repeat" if repeat > 1 else "text"), problem)  # fmt: skip
    t.ctx.streamed += size
    if t.ctx.streamed > MAX_TOTAL_TEXT_CHARS:
        problem = (f"the scenario's steps and branches stream more than {MAX_TOTAL_TEXT_CHARS} "
                   "characters in all (the limit)")
        raise t.ctx.error(t.at("text"), problem)  # fmt: skip
    text *= repeat
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
    ctx: Context, at: FieldPath, branch: Branch, previous: Step | None, tools: Sequence[ToolSpec]
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
            f" (it calls: {join_names(called)})"
        )
        raise ctx.error((*at, "tool"), problem)
    if branch.when == "TOOL_FAILED":
        watched = (branch.tool,) if branch.tool is not None else called
        if not any(spec.fails or spec.retry_if for spec in tools if spec.name in watched):
            problem = (
                f"TOOL_FAILED can never match: no tool of {join_names(watched)} has fails = true"
                " or retry_if"
            )
            raise ctx.error((*at, "when"), problem)


def _check_last_step(ctx: Context, at: FieldPath, step: Step) -> None:
    if step.tool_calls:
        problem = f"the last step of a turn cannot call tools: {_NO_TOOL_WAIT}"
        raise ctx.error((*at, "tool_calls"), problem)
    for j, branch in enumerate(step.branches):
        if branch.tool_calls:
            problem = f"a branch of the last step of a turn cannot call tools: {_NO_TOOL_WAIT}"
            raise ctx.error((*at, "branches", j, "tool_calls"), problem)


def _expectation(t: Table, tools: Sequence[ToolSpec]) -> Expectation:
    name, n = t.ctx.occurrence(t.at("at"), t.require("at", str))
    fault = t.choice("fault", "sigkill")
    if fault not in _EXPECT_FAULTS:
        problem = (f"{fault} cases never check [[expect]] (only "
                   f"{join_names(tuple(_EXPECT_FAULTS))} cases do): it would never be checked")
        raise t.ctx.error(t.at("fault"), problem)  # fmt: skip
    where = _EXPECT_FAULTS[fault]
    if where is not None and name not in where:
        problem = (f"{fault} cases run only at {join_names(where)}, so an expectation at "
                   f"{name}#{n} would never be checked")
        raise t.ctx.error(t.at("at"), problem)  # fmt: skip
    repair = t.strings("repair")
    for at, code in repair or []:
        if code not in REPAIR_CODES:
            problem = f"unknown repair code {code!r} (valid: {join_names(REPAIR_CODES)})"
            raise t.ctx.error(at, problem)
    policies = t.strings("policies")
    for at, policy in policies or []:
        if policy not in POLICIES:
            raise t.ctx.error(at, f"unknown policy {policy!r} (valid: {join_names(POLICIES)})")
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
        policies=None if policies is None else tuple(policy for _, policy in policies),
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
        raw = read_bytes(path, what="scenario file", limit=MAX_SCENARIO_BYTES)
    except UserFileError as exc:
        raise ScenarioError(exc.path, "", exc.problem) from None
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ScenarioError(shown, "", "is UTF-16 (it starts with a UTF-16 byte-order mark); "
                            "scenario files are UTF-8")  # fmt: skip
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        problem = f"not UTF-8 (byte offset {exc.start})"
        raise ScenarioError(shown, "", problem, line) from None
    return parse_scenario(text, path=shown)
