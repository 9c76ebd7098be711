# The gate's records: what faultlab's own servers (the scripted model server,
# the MCP tool server, the app children's model, tools and checkpointer
# proxy) and the lab's drives observed during a case, in order.  A record is
# either a boundary (`boundary`, its occurrence `n` counted per boundary over
# the whole case, `t`) or a fact (`fact`, `t`); the rest are the details the
# reporter gave.  The gate builds every record itself (`Gate.reach`,
# `Gate.note`); an out-of-process server's line that is not a JSON object
# with an `op` becomes a `gate/bad-message` fact (`GateBridge`), never a
# record of its own shape.  The records are the black-box and app oracles'
# ground truth and are written as `records.jsonl` beside each case.
from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypedDict, cast

from faultlab.lab.process.probereport import ProbeReport

__all__ = ["GateRecord", "as_trace", "boundary_record", "fact_record"]


class GateRecord(TypedDict, total=False):
    """One gate record.  Only `t` and one of `boundary` (with `n`) or `fact`
    are always there; the other keys are the details of the boundary or fact
    that has them (a reporter may add keys this type does not name: they are
    kept, and written to `records.jsonl`)."""

    # Every record.
    t: float  # seconds since the gate was made
    boundary: str  # a boundary record: its name ...
    n: int  # ... and its occurrence, counted per boundary over the case
    fact: str  # a fact record: its name (not a kill point)
    killPoint: bool  # the armed occurrence
    hold: bool  # only on the copy `reach` returns: the armed occurrence at delay 0
    # The model server (`model/request`, `model/chunk`, `model/response`) and
    # the apps' scripted models (`model/request`, `model/answered`, `model/rejected`).
    api: str
    path: str
    history: list[Any]  # the request's messages, as History.to_json gives them
    digest: str
    step: int
    turn: int
    branch: Any
    stream: bool
    model: str  # the model name a request asked for
    request: int  # the n of the model/request a chunk or response belongs to
    index: int  # a chunk's position in its stream
    text: str  # a model response's text; a tool reply's text
    calls: list[Any]  # a response's tool calls (the apps: their ids)
    tools: list[Any]  # `model/tool-not-offered`: the scripted tools the request did not offer
    offered: list[Any]  # ... and the tool names it did offer
    count: int  # the messages a request or a saved history held
    problems: list[str]  # why the apps' model rejected a request
    # The tool servers (`tool/received`, `tool/applied`, `tool/replied`) and
    # the apps' ledger tools (`tool/started`, `tool/effect`, `tool/returned`).
    callId: str
    tool: str
    arguments: dict[str, Any]
    applied: bool
    key: str | None  # the idempotency key an applied effect was recorded under
    isError: bool
    # The apps' checkpointer proxy and children.
    asked: Any
    answered: Any
    at: str  # `app/ioerror`: the occurrence whose write failed, `name#n`
    style: str
    action: str
    # The drives' notes (`agent/start`, `agent/exit`, `app/exit`, ...).
    run: int
    kind: str
    pid: int
    status: int
    killed: bool
    left: int
    line: str  # `gate/bad-message`: the start of the line that was not a report


def boundary_record(boundary: str, n: int, t: float, detail: dict[str, Any]) -> GateRecord:
    """The record of occurrence `n` of `boundary` with the reporter's details."""
    return cast(GateRecord, {"boundary": boundary, "n": n, "t": t, **detail})


def fact_record(fact: str, t: float, detail: dict[str, Any]) -> GateRecord:
    """The record of a fact with the reporter's details."""
    return cast(GateRecord, {"fact": fact, "t": t, **detail})


def as_trace(records: Iterable[GateRecord]) -> tuple[ProbeReport, ...]:
    """The records as a `Reference.trace` holds them (the planner reads the
    boundaries' `boundary` and `n` there, as it does a probe trace's; the two
    types share those keys)."""
    return cast("tuple[ProbeReport, ...]", tuple(records))
