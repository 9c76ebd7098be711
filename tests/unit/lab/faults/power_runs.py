# A synthetic run for the power-loss unit tests: a session log and the probe
# trace that wrote it (create, dirsync, write, flush/written, fsync facts),
# built together, and the `Reference` the lab would have recorded of it.
# Shared by test_faults_powerstates.py (the crash states) and
# test_faults_powerloss.py (checking them, planning and running the cases).
from __future__ import annotations

from typing import Any

import orjson

from faultlab.lab.process.reference import Reference
from faultlab.lab.read.jsonl import parse_log
from faultlab.scenario import parse_scenario

DIR = "/s"
LOG = f"{DIR}/session.jsonl"
HEADER = b'{"type":"session","format":1,"id":"s","createdAt":1.5}\n'
SCENARIO = parse_scenario(
    'format = 1\nname = "t"\n[tools.charge]\neffect = "ledger"\n'
    '[[turns]]\nuser = "pay"\n  [[turns.steps]]\n  text = "paid"\n',
    path="<t>",
)


def line(seq: int, kind: str, **data: Any) -> bytes:
    return orjson.dumps({"seq": seq, "type": kind, "time": 1.5, "data": data}) + b"\n"


class Run:
    """A log and the probe trace that wrote it, built together."""

    def __init__(self, *, dirsync: bool = True, fsync: bool = True) -> None:
        self.data = HEADER
        self.fsync = fsync
        self.trace: list[dict[str, Any]] = [{"fact": "create", "file": LOG, "size": len(HEADER)}]
        if dirsync:
            self.trace.append({"fact": "dirsync", "dir": DIR})
        self.seq = 0
        self.flushes = 0

    def event(self, kind: str, **data: Any) -> bytes:
        encoded = line(self.seq, kind, **data)
        self.seq += 1
        return encoded

    def boundary(self, name: str, **facts: Any) -> None:
        n = sum(1 for m in self.trace if m.get("boundary") == name) + 1
        self.trace.append({"boundary": name, "n": n, **facts})

    def flush(self, *lines: bytes) -> None:
        first = self.seq - len(lines)
        payload = b"".join(lines)
        self.trace.append(
            {"fact": "write", "file": LOG, "offset": len(self.data), "bytes": len(payload)}
        )
        self.data += payload
        self.boundary("flush/written", file=LOG, size=len(self.data))
        if self.fsync:
            self.trace.append({"fact": "fsync", "file": LOG, "size": len(self.data)})
        self.trace.append({"fact": "flush", "ok": True, "first": first, "last": self.seq - 1})

    def turn(self) -> None:
        """One turn with a request checkpoint, a tool call and a post-step flush."""
        self.boundary("turn/started", turn=0)
        self.flush(
            self.event("turn/start", turn=0),
            self.event("user/message", turn=0, message="pay"),
            self.event("step/start", turn=0, step=0),
            self.event("request/header", turn=0, step=0, requestId="r0", envelope={"digest": "d0"}),
        )
        self.boundary("request/durable", requestId="r0", digest="d0")
        call = {"type": "tool-call", "id": "c0", "name": "charge", "arguments": {}}
        message = {"role": "assistant", "content": [{"type": "text", "text": "x"}, call]}
        self.flush(
            self.event("assistant/message", turn=0, step=0, message=message),
            self.event("tool/call", turn=0, step=0, callId="c0", name="charge", arguments={}),
        )
        self.boundary("tool/durable", callId="c0", parentCallId=None)
        self.boundary("tool/effect", callId="c0", tool="charge", applied=True)
        self.flush(
            self.event("tool/result", turn=0, step=0, callId="c0", content="ok", isError=False),
            self.event("step/end", turn=0, step=0),
            self.event("turn/end", turn=0, reason={"kind": "completed"}),
        )

    def reference(self, ledger: tuple[dict[str, Any], ...] = ()) -> Reference:
        return Reference(
            scenario=SCENARIO,
            scenario_path="/x/t.toml",
            trace=tuple(self.trace),
            log=parse_log(self.data, LOG),
            ledger=ledger,
            returncode=0,
            log_bytes=self.data,
            stderr="",
        )


def written_at(run: Run, k: int) -> int:
    return next(
        m["size"] for m in run.trace if m.get("boundary") == "flush/written" and m["n"] == k
    )

