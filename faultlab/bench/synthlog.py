# A synthetic session log for the reload benchmark (`faultlab.bench`): valid
# JSONL v1 (docs/log-format.md) shaped like a long real session.  Many turns,
# each with a user message, request headers, streamed chunks, an assistant
# message with tool calls, their tool/call and tool/result events, and a final
# answer; the last turn is left open after a durable call with no result, so
# crash repair has work to do.  Deterministic for a given size.
#
# Two shapes: "chunks" (the acceptance log: mostly token-sized
# `assistant/chunk` events, about 160 bytes an event, the worst case for a
# reader that builds an object per event) and "documents" (informational:
# answers streamed in sentence-sized deltas and tool results that are whole
# files of a few KB, with newlines, quotes and indentation to escape, as in the
# logs of agents that read and write code).
from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

__all__ = ["SHAPES", "TOOLS_TOML", "SyntheticLog", "write_synthetic_log"]

SHAPES = ("chunks", "documents")

# The tools the log calls, as a scenario's [tools] tables (for expected_repair).
TOOLS_TOML = """
[tools.search_docs]
read_only = true
parallel_safe = true
[tools.read_file]
read_only = true
parallel_safe = true
[tools.fetch_weather]
read_only = true
parallel_safe = true
[tools.charge_card]
effect = "ledger"
[tools.send_email]
effect = "ledger"
"""
_READS = ("search_docs", "read_file", "fetch_weather")

_TEXT = (
    "the session log is durable before every irreversible step so a crash loses only "
    "what was never promised; a checkpoint flushes the request header before the model "
    "is called and the tool call before its body runs, and crash repair answers every "
    "call that was left open: café naïve déjà-vu 東京 — results cite the seq of the call"
)
_WORDS = tuple(_TEXT.split())


@dataclass(frozen=True, slots=True)
class SyntheticLog:
    """What was written: the file, its size, its events and turns."""

    path: Path
    size: int
    events: int
    turns: int


class _Writer:
    def __init__(self, rng: random.Random, *, documents: bool) -> None:
        self.rng = rng
        self.documents = documents
        self.seq = 0
        self.time = 1_796_010_133.0
        self.lines: list[bytes] = []
        self.pending = 0  # bytes in `lines`

    def event(self, kind: str, data: dict[str, Any]) -> int:
        self.time += self.rng.random() * 0.05
        seq = self.seq
        record = {"seq": seq, "type": kind, "time": self.time, "data": data}
        line = orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE)
        self.lines.append(line)
        self.pending += len(line)
        self.seq += 1
        return seq

    def text(self, low: int, high: int) -> str:
        return " ".join(self.rng.choices(_WORDS, k=self.rng.randint(low, high)))

    def file(self, low: int, high: int) -> str:
        """Source-file-like text: indented lines with quotes and comments."""
        rng = self.rng
        rows = []
        for _ in range(rng.randint(low, high)):
            words = rng.choices(_WORDS, k=rng.randint(2, 9))
            indent = "    " * rng.randint(0, 3)
            if rng.random() < 0.3:
                rows.append(f"{indent}# {' '.join(words)}")
            else:
                rows.append(f'{indent}{words[0]}_{len(rows)} = "{" ".join(words[1:])}"')
        return "\n".join(rows) + "\n"

    def stream(self, turn: int, step: int, low: int, high: int) -> str:
        """Log `assistant/chunk` events (token-sized deltas; sentence-sized for
        the documents shape); return the text."""
        if self.documents:
            count = self.rng.randint(max(1, low // 10), max(1, high // 10))
            deltas = [self.text(15, 50) + ". " for _ in range(count)]
        else:
            words = self.rng.choices(_WORDS, k=self.rng.randint(low, high))
            deltas = [word + " " for word in words]
        for index, delta in enumerate(deltas):
            self.event(
                "assistant/chunk", {"turn": turn, "step": step, "index": index, "delta": delta}
            )
        return "".join(deltas).rstrip()

    def request(self, turn: int, step: int, messages: int) -> None:
        self.event("step/start", {"turn": turn, "step": step})
        digest = hashlib.sha256(f"{turn}/{step}/{messages}".encode()).hexdigest()
        envelope = {
            "model": "faultlab-scripted",
            "params": {"scriptTurn": turn, "scriptStep": step, "temperature": 0.2},
            "tools": [*_READS, "charge_card", "send_email"],
            "messageCount": messages,
            "digest": digest,
        }
        self.event(
            "request/header",
            {"turn": turn, "step": step, "requestId": f"req-t{turn}-s{step}", "envelope": envelope},
        )

    def assistant(self, turn: int, step: int, text: str, calls: list[tuple[str, str]]) -> None:
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        for call_id, name in calls:
            arguments = {"query": self.text(2, 6), "limit": self.rng.randint(1, 20)}
            content.append(
                {"type": "tool-call", "id": call_id, "name": name, "arguments": arguments}
            )
        self.event(
            "assistant/message",
            {"turn": turn, "step": step, "message": {"role": "assistant", "content": content}},
        )

    def call(self, turn: int, step: int, call_id: str, name: str) -> int:
        arguments = {"query": self.text(2, 6), "limit": self.rng.randint(1, 20)}
        return self.event(
            "tool/call",
            {"turn": turn, "step": step, "callId": call_id, "name": name, "arguments": arguments},
        )

    def result(self, turn: int, step: int, call_id: str, cites: int) -> None:
        data = {
            "turn": turn,
            "step": step,
            "callId": call_id,
            # a search hit, a file, a forecast
            "content": self.file(30, 150) if self.documents else self.text(20, 300),
            "isError": False,
            "sourceEventSeqs": [cites],
        }
        self.event("tool/result", data)

    def turn(self, turn: int, messages: int) -> int:
        """One completed turn: a step that calls tools, then a final answer."""
        self.event("turn/start", {"turn": turn, "scriptTurn": turn, "scriptStep": 0})
        self.event("user/message", {"turn": turn, "message": self.text(8, 40)})
        self.request(turn, 0, messages + 1)
        text = self.stream(turn, 0, 10, 60)
        names = self.rng.choices(_READS, k=self.rng.randint(1, 4))
        if self.rng.random() < 0.2:
            names.append("charge_card")
        calls = [(f"call-t{turn}-s0-{i}", name) for i, name in enumerate(names)]
        self.assistant(turn, 0, text, calls)
        cited = [self.call(turn, 0, call_id, name) for call_id, name in calls]
        for (call_id, _name), seq in zip(calls, cited, strict=True):
            self.result(turn, 0, call_id, seq)
        self.event("step/end", {"turn": turn, "step": 0})
        self.request(turn, 1, messages + 3 + len(calls))
        self.assistant(turn, 1, self.stream(turn, 1, 20, 120), [])
        self.event("step/end", {"turn": turn, "step": 1})
        self.event("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
        return messages + 4 + len(calls)

    def open_turn(self, turn: int, messages: int) -> None:
        """The crashed turn: a read answered, a charge durable but unanswered,
        an email requested but never logged."""
        self.event("turn/start", {"turn": turn, "scriptTurn": turn, "scriptStep": 0})
        self.event("user/message", {"turn": turn, "message": "Charge the customer and email them."})
        self.request(turn, 0, messages + 1)
        calls = [
            (f"call-t{turn}-s0-0", "search_docs"),
            (f"call-t{turn}-s0-1", "charge_card"),
            (f"call-t{turn}-s0-2", "send_email"),
        ]
        self.assistant(turn, 0, self.stream(turn, 0, 10, 30), calls)
        self.result(turn, 0, calls[0][0], self.call(turn, 0, *calls[0]))
        self.call(turn, 0, *calls[1])

    def take(self) -> bytes:
        data = b"".join(self.lines)
        self.lines.clear()
        self.pending = 0
        return data


def write_synthetic_log(
    path: Path, size: int, *, seed: int = 4, shape: str = "chunks"
) -> SyntheticLog:
    """Write a log of at least `size` bytes (a little more: whole turns) to
    `path`, of one of the `SHAPES`."""
    if shape not in SHAPES:
        raise ValueError(f"shape: unknown log shape {shape!r} (shapes: {', '.join(SHAPES)})")
    writer = _Writer(random.Random(seed), documents=shape == "documents")
    header = {"type": "session", "format": 1, "id": "bench", "createdAt": writer.time}
    written = 0
    turns = 0
    messages = 0
    with path.open("wb") as out:
        written += out.write(orjson.dumps(header, option=orjson.OPT_APPEND_NEWLINE))
        while written + writer.pending < size:
            messages = writer.turn(turns, messages)
            turns += 1
            if len(writer.lines) >= 4096:
                written += out.write(writer.take())
        writer.open_turn(turns, messages)
        written += out.write(writer.take())
    return SyntheticLog(path, written, writer.seq, turns + 1)
