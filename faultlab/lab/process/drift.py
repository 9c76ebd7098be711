# Whether a later run of a scenario followed the reference run's way: its
# boundaries compared with the reference's, lane by lane (`drift`), with the
# facts that differ between two runs of the same scenario left out
# (`normalized`).
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from faultlab.lab.process.probereport import ProbeReport
from faultlab.lab.process.reference import Reference

__all__ = ["drift", "normalized"]

# Facts that differ between two runs of the same scenario (paths, byte
# counts that depend on timestamps) and do not describe the state reached.
_VOLATILE = frozenset({"file", "source", "size", "offset", "bytes", "parked", "keptIn", "dir"})
def normalized(message: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in message.items() if k not in _VOLATILE}


_FLUSH = "flush/written"


def _lane(message: Mapping[str, Any]) -> str:
    # A top-level call's own boundaries (nested calls run inside their parent's
    # body), every flush, and everything else.
    if message["boundary"] == _FLUSH:
        return _FLUSH
    call = message.get("parentCallId") or message.get("callId")
    return f"call {call}" if call is not None else "run"


def drift(trace: Sequence[ProbeReport], reference: Reference) -> str | None:
    """How the crash run's boundaries left the reference's way, or None.
    Compared in order within lanes: each top-level call's boundaries, the
    flushes, and all other boundaries.  How the lanes interleave may differ:
    the calls of a parallel group run concurrently, and a flush blocks the
    event loop for its fsync, so on a loaded machine a call's start (behind
    the flush of the previous call's tool/call under every-event) and so its
    finish can move past another call's; the log is still recorded in model
    order.  Any other difference (another call id, seq, digest, a boundary
    the reference never reached) is drift."""
    expected: dict[str, list[ProbeReport]] = {}
    for message in reference.boundaries:
        expected.setdefault(_lane(message), []).append(message)
    seen: dict[str, int] = {}
    for message in (m for m in trace if "boundary" in m):
        lane = _lane(message)
        index = seen.get(lane, 0)
        seen[lane] = index + 1
        theirs = expected.get(lane, [])
        if index >= len(theirs):
            return f"{message['boundary']}#{message.get('n')} is past the reference's end"
        # A call's `n` counts that boundary over every call: it moves with the
        # interleaving, the call id and the rest do not.
        ours, want = normalized(message), normalized(theirs[index])
        if lane.startswith("call "):
            ours.pop("n", None)
            want.pop("n", None)
        if ours != want:
            return f"boundary {index + 1} of {lane} differs from the reference: {ours} vs {want}"
    return None
