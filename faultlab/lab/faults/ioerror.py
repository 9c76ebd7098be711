# The io-error family of faults: the target's next flush fails, on its write or
# on its fsync, with EIO or ENOSPC, one fault name per pair so each is its own
# case (`io-error` keeps its case ids: the write failing with EIO):
#   io-error         write  EIO        fsync-error    fsync  EIO
#   io-error-enospc  write  ENOSPC     fsync-enospc   fsync  ENOSPC
# Owned here: where such a case is planned (only where the reference run
# attempts a flush after the armed point, else the failure has nothing to hit),
# the reply that arms it, and the checks beyond G9 that a failed fsync needs.
# After a failed fsync the kernel may have dropped the dirty pages and marked
# them clean, so a later fsync "succeeds" without writing them (fsyncgate):
# the power-loss rules (powerstates.py, fact `fsync-failed`) never count those
# bytes durable again, and a flush that claims them is a failed checkpoint.
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from faultlab.lab.faults.powerstates import file_states, unsupported
from faultlab.lab.faults.sigkill import Act, ExtraChecks
from faultlab.lab.oracle.checks import Observation, check_crash_durability
from faultlab.lab.oracle.codes import Violation
from faultlab.lab.oracle.live import check_fail_closed
from faultlab.lab.process.probereport import ProbeReport
from faultlab.lab.process.spawn import Child, ChildExit
from faultlab.lab.read.view import LogView

__all__ = [
    "IO_FAULTS",
    "IoFault",
    "check_io_error",
    "flush_follows",
    "inject",
    "with_failed_fsync",
]


@dataclass(frozen=True, slots=True)
class IoFault:
    """What one io-error fault fails: the probe's ``op`` and the errno name."""

    op: str  # "write" or "sync" (docs/probe-protocol.md, fail-next-flush)
    errno: str

    @property
    def summary(self) -> str:
        call = {"write": "write", "sync": "fsync"}[self.op]
        return f"the next flush's {call} fails with {self.errno}"


# The family by fault name (the classic drive's table, table.py, has one
# entry per name, each bound to its IoFault).
IO_FAULTS: dict[str, IoFault] = {
    "io-error": IoFault("write", "EIO"),
    "io-error-enospc": IoFault("write", "ENOSPC"),
    "fsync-error": IoFault("sync", "EIO"),
    "fsync-enospc": IoFault("sync", "ENOSPC"),
}
# A fact that shows the target attempted a flush (or the write or fsync of one).
_ATTEMPTS = {"write": ("flush", "write"), "sync": ("flush", "fsync", "fsync-failed")}


def flush_follows(trace: Sequence[ProbeReport], index: int, fault: IoFault) -> bool:
    """Whether the reference run attempts a flush after ``trace[index]``: the
    armed failure needs one to hit.  A target that reports none of these facts
    at all keeps every case (it then fails FAULT_NOT_INJECTED, never a pass)."""
    kinds = _ATTEMPTS[fault.op]
    if not any(m.get("fact") in kinds for m in trace):
        return True
    return any(m.get("fact") in kinds for m in trace[index + 1 :])


def inject(fault: IoFault) -> Act:
    """The act of a parked case: arm the failure, then let the child go on."""

    def act(child: Child) -> bool:
        child.reply("fail-next-flush", op=fault.op, errno=fault.errno)
        return False

    return act


def check_io_error(fault: IoFault) -> ExtraChecks:
    """G9 for every io fault; after a failed fsync also fsyncgate's two checks."""

    def check(obs: Observation, status: ChildExit | None) -> list[Violation]:
        if fault.op != "sync":
            return check_fail_closed(obs, status) + _durable_after_run(obs, obs.trace)
        trace = with_failed_fsync(obs.trace)
        trusted, corrected = _trusted_flushes(trace)
        found = check_fail_closed(replace(obs, trace=corrected), status)
        return found + trusted + _durable_after_run(obs, trace)

    return check


def with_failed_fsync(trace: tuple[Mapping[str, Any], ...]) -> tuple[Mapping[str, Any], ...]:
    """The trace with the failed fsync the lab armed, when the target did not
    report it: the lab knows the first fsync after the park failed, so it
    happened before the first fsync, flush or truncate fact that follows."""
    parked = next((i for i, m in enumerate(trace) if m.get("parked")), None)
    if parked is None or any(m.get("fact") == "fsync-failed" for m in trace[parked:]):
        return trace
    file = None
    for index in range(parked + 1, len(trace)):
        message = trace[index]
        if message.get("fact") == "write" and isinstance(message.get("file"), str):
            file = message["file"]
        if message.get("fact") in ("fsync", "flush", "truncate") and file is not None:
            size = file_states(trace[:index]).get(file)
            lab = {"fact": "fsync-failed", "file": file, "lab": True,
                   "size": size.written if size else 0}  # fmt: skip
            return (*trace[:index], lab, *trace[index:])
    return trace


def _trusted_flushes(
    trace: tuple[Mapping[str, Any], ...],
) -> tuple[list[Violation], tuple[Mapping[str, Any], ...]]:
    """Flushes reported ok whose bytes a failed fsync left possibly lost, and
    the trace with each of them turned into the failed flush it really was."""
    found: list[Violation] = []
    corrected = list(trace)
    reported: set[tuple[str, int]] = set()
    for index, message in enumerate(trace):
        if message.get("fact") != "flush" or not message.get("ok"):
            continue
        lost = [s for s in file_states(trace[:index]).values()
                if s.poisoned is not None and s.synced < s.written]  # fmt: skip
        if not lost:
            continue
        corrected[index] = {**message, "ok": False, "trusted": True}
        state = lost[0]
        if (state.path, state.synced) in reported:
            continue  # one violation per failed fsync; every later flush is failed too
        reported.add((state.path, state.synced))
        found.append(Violation(
            "FSYNC_FAILURE_TRUSTED",
            f"a flush of seqs {message.get('first')}..{message.get('last')} was reported ok "
            f"after an fsync of {state.path} failed, but bytes {state.synced}..{state.written} "
            "were not written again: after a failed fsync the kernel may have dropped them, "
            "and a later fsync's success does not bring them back",
            {"first": message.get("first"), "last": message.get("last"), "file": state.path,
             "durable": state.synced, "written": state.written},
        ))  # fmt: skip
    return found, tuple(corrected)


def _durable_after_run(obs: Observation, trace: tuple[Mapping[str, Any], ...]) -> list[Violation]:
    """G1, G2, G4 if power is lost right after the faulted child exits: what
    it acted on or claimed durable must be in the log cut back to the bytes
    the power-loss rules call durable.  Needs write facts (the fact path)."""
    if unsupported(trace) is not None or not obs.crashed.exists:
        return []
    writes = [m["file"] for m in trace
              if m.get("fact") == "write" and isinstance(m.get("file"), str)]  # fmt: skip
    state = file_states(trace).get(writes[-1]) if writes else None
    if state is None or state.synced >= obs.crashed.valid_size:
        return []
    durable = _cut(obs.crashed, state.synced if state.durable is not None else 0)
    return [
        replace(v, message=f"[power loss after the run] {v.message}",
                evidence={**v.evidence, "state": "after-run", "durable": state.synced})
        for v in check_crash_durability(trace, durable, obs.reference_log)
    ]  # fmt: skip


def _cut(view: LogView, size: int) -> LogView:
    """`view` as if its file ended at byte `size` (whole events only)."""
    ends = [e.offset for e in view.events[1:]] + [view.valid_size]
    kept = tuple(e for e, end in zip(view.events, ends, strict=True) if end <= size)
    problems = tuple(p for p in view.problems if p.offset < size)
    valid = min(view.valid_size, size)
    return replace(view, events=kept, size=size, valid_size=valid, torn_bytes=0,
                   problems=problems)  # fmt: skip
