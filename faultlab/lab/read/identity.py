# The identity checks of a read log: one `turn/start` per turn number and one
# `request/header` per request id (docs/log-format.md section 7.2).  Seqs say
# the events are in order; these say no turn or request was written twice
# (a turn counter rebuilt wrongly on load, a request id that is not unique),
# which no seq check sees.  A pass over the events already made, so the
# readers' bulk fast path (fastpath.py) keeps its inner loop unchanged.
from __future__ import annotations

from collections.abc import Sequence
from itertools import compress
from operator import itemgetter

from faultlab.lab.read.view import REQUEST_DUPLICATE, TURN_DUPLICATE, LogEvent, LogProblem

__all__ = ["identity_problems", "with_identity_problems"]

_TYPE = itemgetter(1)  # LogEvent.type
# event type, its identity field, the field's JSON type, the problem code
_KEYS = (
    ("turn/start", "turn", int, TURN_DUPLICATE),
    ("request/header", "requestId", str, REQUEST_DUPLICATE),
)


def identity_problems(events: Sequence[LogEvent]) -> list[LogProblem]:
    """A problem at every `turn/start` whose turn number, and every
    `request/header` whose request id, an earlier event of its type had."""
    seen: dict[str, dict[object, LogEvent]] = {kind: {} for kind, *_rest in _KEYS}
    fields = {kind: (key, kind_of, code) for kind, key, kind_of, code in _KEYS}
    found = []
    # The few events with an identity, picked in C-level passes: a big log is
    # mostly chunks, and the reader's speed is benchmarked (`faultlab bench`).
    for event in compress(events, map(fields.__contains__, map(_TYPE, events))):
        key, kind_of, code = fields[event.type]
        value = event.data.get(key)
        if type(value) is not kind_of:
            continue  # no identity to compare (a malformed field is not this check's business)
        first = seen[event.type].setdefault(value, event)
        if first is not event:
            what = (
                f"line {event.line} (byte {event.offset}): {event.type} {key} {value!r} "
                f"(seq {event.seq}) repeats the one at line {first.line} (seq {first.seq})"
            )
            found.append(LogProblem(code, event.line, event.offset, what))
    return found


def with_identity_problems(
    problems: Sequence[LogProblem], events: Sequence[LogEvent]
) -> tuple[LogProblem, ...]:
    """`problems` and the identity problems of `events`, in line order.  A line
    that already has a problem (a repeated seq repeats its whole event) gets no
    second one: one defect, one report."""
    taken = {p.line for p in problems}
    extra = [p for p in identity_problems(events) if p.line not in taken]
    if not extra:
        return tuple(problems)
    return tuple(sorted([*problems, *extra], key=lambda p: p.line))
