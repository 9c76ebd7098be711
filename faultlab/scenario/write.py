# Scenario objects -> scenario TOML text (format 1) that `parse_scenario`
# reads back to an equal object.
#
# This module owns the one way back from a `Scenario` to a file: the TOML
# escaping of strings and keys, inline tables for arguments, and choosing a
# chunking option (`chunks`, `chunk_size` or the default word split) that
# reproduces a step's stream chunks exactly.  Chunks no option can reproduce
# are refused with a ValueError rather than written differently.
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from faultlab.scenario.chunking import chunk_text
from faultlab.scenario.model import Branch, Expectation, Scenario, Step, ToolCallSpec, ToolSpec

__all__ = ["dump", "dump_scenario"]

_ESCAPES = {
    '"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r",
}  # fmt: skip


def _string(text: str) -> str:
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04X}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _key(key: str) -> str:
    bare = key and all(c.isascii() and (c.isalnum() or c in "_-") for c in key)
    return key if bare else _string(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if not -(2**63) <= value < 2**63:
            raise ValueError(f"integer {value} does not fit TOML's 64 bits")
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value} cannot be written to a scenario (it is logged as JSON)")
        text = repr(value)
        return text if any(c in text for c in ".en") else text + ".0"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, Mapping):
        return _inline(value)
    if isinstance(value, Sequence):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    raise ValueError(f"a {type(value).__name__} cannot be written to a scenario")


def _inline(table: Mapping[str, Any]) -> str:
    if not table:
        return "{}"
    return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in table.items()) + " }"


def _calls(calls: Sequence[ToolCallSpec]) -> str:
    items = []
    for call in calls:
        args = f", arguments = {_inline(call.arguments)}" if call.arguments else ""
        items.append(f"{{ tool = {_string(call.tool)}{args} }}")
    return "[" + ", ".join(items) + "]"


def _chunking(chunks: tuple[str, ...]) -> list[str]:
    """The `text` and chunking keys that stream exactly `chunks`."""
    text = "".join(chunks)
    if not text:
        if chunks:
            raise ValueError("a step cannot stream empty chunks")
        return []
    lines = [f"text = {_string(text)}"]
    if chunk_text(text) == chunks:
        return lines
    if chunk_text(text, chunk_size=len(chunks[0])) == chunks:
        return [*lines, f"chunk_size = {len(chunks[0])}"]
    if chunk_text(text, chunks=len(chunks)) == chunks:
        return [*lines, f"chunks = {len(chunks)}"]
    raise ValueError(f"no chunking option streams {list(chunks)!r}")


def _content(content: Step | Branch) -> list[str]:
    lines = _chunking(content.chunks)
    if content.tool_calls:
        lines.append(f"tool_calls = {_calls(content.tool_calls)}")
    return lines


def _tool(spec: ToolSpec) -> list[str]:
    lines = [f"[tools.{_key(spec.name)}]"]
    default = ToolSpec(spec.name)
    for flag in ("read_only", "idempotent", "parallel_safe", "accepts_idempotency_key", "fails"):
        if getattr(spec, flag) != getattr(default, flag):
            lines.append(f"{flag} = {_value(getattr(spec, flag))}")
    if spec.effect != "none":
        lines.append(f"effect = {_string(spec.effect)}")
    if spec.latency_ms:
        lines.append(f"latency_ms = {spec.latency_ms}")
    for key in ("returns_after", "returns_after_start"):
        if (other := getattr(spec, key)) is not None:
            lines.append(f"{key} = {_string(other)}")
    # The parser's default result is "ok"; the dataclass's is "": write it always.
    lines.append(f"result = {_string(spec.result)}")
    if spec.observes is not None:
        lines.append(f"observes = {_string(spec.observes)}")
    if spec.retry_if is not None:
        lines.append(f"retry_if = {_inline(spec.retry_if)}")
    if spec.calls:
        calls = [ToolCallSpec(c.tool, c.arguments) for c in spec.calls]
        lines.append(f"calls = {_calls(calls)}")
    return lines


def _step(step: Step) -> list[str]:
    lines = ["[[turns.steps]]", *_content(step)]
    if step.delay_ms:
        lines.append(f"delay_ms = {step.delay_ms}")
    if step.chunk_delay_ms:
        lines.append(f"chunk_delay_ms = {step.chunk_delay_ms}")
    for branch in step.branches:
        lines += ["", "[[turns.steps.branches]]", f"when = {_string(branch.when)}"]
        if branch.tool is not None:
            lines.append(f"tool = {_string(branch.tool)}")
        lines += _content(branch)
    return lines


def _expectation(expect: Expectation) -> list[str]:
    lines = ["[[expect]]", f"at = {_string(expect.at)}", f"fault = {_string(expect.fault)}"]
    if expect.repair is not None:
        lines.append(f"repair = {_value(list(expect.repair))}")
    if expect.ledger is not None:
        lines.append(f"ledger = {_inline(expect.ledger)}")
    if expect.policies is not None:
        lines.append(f"policies = {_value(list(expect.policies))}")
    return lines


def dump(scenario: Scenario) -> str:
    """Scenario TOML text that parses back to `scenario` (but its `path`)."""
    lines = [
        "format = 1",
        f"name = {_string(scenario.name)}",
        f"description = {_string(scenario.description)}",
        f"policy = {_string(scenario.policy)}",
        f"backend = {_string(scenario.backend)}",
        f"max_parallel_tools = {scenario.max_parallel_tools}",
        f"resume_prompt = {_string(scenario.resume_prompt)}",
        f"boundaries = {_value(list(scenario.boundaries))}",
    ]
    for spec in scenario.tools:
        lines += ["", *_tool(spec)]
    for turn in scenario.turns:
        lines += ["", "[[turns]]", f"user = {_string(turn.user)}"]
        for step in turn.steps:
            lines += ["", *_step(step)]
    for expect in scenario.expectations:
        lines += ["", *_expectation(expect)]
    return "\n".join(lines) + "\n"


def dump_scenario(scenario: Scenario) -> str:
    """Scenario TOML text that `parse_scenario` reads back to an equal scenario
    (but its `path`); ValueError when a value cannot be written."""
    return dump(scenario)
