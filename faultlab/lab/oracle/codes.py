# The oracle's codes: every stable violation code with its guarantee and what
# it means for a person who must act on it, and the violation value that
# carries one code with its evidence.
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "FULL_POLICIES", "GUARANTEES", "POLICY_GAPS", "PROMISES", "Violation", "explain", "promise",
]  # fmt: skip

# code -> (guarantee, what it means for a person who must act on it)
GUARANTEES: dict[str, tuple[str, str]] = {
    "REQUEST_ENVELOPE_LOST": (
        "G1",
        "a request reached the model but its request/header was not durable",
    ),
    "TOOL_INTENT_LOST": ("G2", "a tool body started but its tool/call was not durable"),
    "REPAIR_MISCLASSIFIED": (
        "G3",
        "crash repair answered a call with the wrong class (or cited the wrong seq)",
    ),
    "SETTLED_STEP_LOST": ("G4", "events of a completed flush were missing after the crash"),
    "COMPLETED_TURN_LOST": ("G4", "a completed turn was missing after the crash"),
    "REPAIR_LOST": (
        "G4",
        "crash repair was reported durable (repair/durable) and a power loss during the "
        "recovery lost it",
    ),
    "LOG_NOT_PREFIX": ("G5", "the recovered log is not a prefix of what was appended"),
    "SEQ_GAP": ("G5", "the recovered log skips a seq"),
    "SEQ_DUPLICATE": ("G5", "the recovered log repeats a seq"),
    "CORRUPT_COMMITTED_LOG": ("G5", "a committed line of the recovered log cannot be read"),
    "TURN_DUPLICATE": ("G5", "the log has two turn/start events for one turn number"),
    "REQUEST_DUPLICATE": ("G5", "the log has two request/header events for one request id"),
    "CUT_TAIL_LOST": (
        "G5",
        "a writer cut a torn tail or damaged suffix off the log without keeping the cut bytes "
        "in a cut file",
    ),
    "UNSAFE_RETRY_GUIDANCE": (
        "G6",
        "repair told the model a retry is safe for a tool that is not idempotent",
    ),
    "SIDE_EFFECT_DUPLICATED": ("G6", "a non-idempotent effect was applied twice after resume"),
    "UNKNOWN_OUTCOME_RERUN": (
        "G6",
        "a non-idempotent call whose outcome was unknown (its body had started, no result was "
        "durable) ran again after resume without the model being told",
    ),
    "PROVIDER_INVALID_HISTORY": (
        "G7",
        "the repaired history breaks the tool-call pairing rules model APIs enforce",
    ),
    "REPAIR_NOT_IDEMPOTENT": ("G8", "repairing an already repaired log changed it"),
    "DISPATCH_AFTER_FAILED_CHECKPOINT": ("G9", "work was dispatched after a failed checkpoint"),
    "FSYNC_FAILURE_TRUSTED": (
        "G9",
        "a flush was reported ok although an fsync of its bytes had failed and they were "
        "not written again (fsyncgate: the kernel may have dropped them)",
    ),
    "DISPATCH_AFTER_CANCEL": (
        "G9",
        "a tool body started although cancellation landed during its checkpoint",
    ),
    "SEQ_FORK": ("G5", "a second writer was not refused, or the session's seqs forked"),
    "CORRUPTION_IGNORED": (
        "G5",
        "the target loaded a log with a corrupt committed line instead of refusing it",
    ),
    "FAULT_NOT_INJECTED": ("lab", "the fault was armed but never took effect in the target"),
    "GRACEFUL_CLOSE_MISSING": (
        "G10",
        "a graceful stop did not persist its closing events, or left a call unanswered",
    ),
    "ACP_REPLAY_MISMATCH": (
        "ACP",
        "session/load showed the client a conversation other than the repaired log's",
    ),
    "GUIDANCE_NOT_DELIVERED": (
        "ACP",
        "the first model request after TOOL_OUTCOME_UNKNOWN lacked the logged retry guidance",
    ),
    "CANCEL_NOT_PERSISTED": (
        "ACP",
        "after session/cancel a tool call stayed open for the client or the log lacks the "
        "real closing events",
    ),
    # The target's own file facts checked against its system calls (strace).
    "FSYNC_WRONG_FILE": (
        "syscalls",
        "a reported fsync of a file was made on another file (the wrong descriptor)",
    ),
    "FSYNC_NOT_MADE": ("syscalls", "a reported fsync was never made: no fsync system call"),
    "DIRSYNC_NOT_MADE": (
        "syscalls",
        "a reported directory fsync was never made on that directory",
    ),
    "WRITE_NOT_MADE": ("syscalls", "a reported write never reached that file"),
    "REPORTED_SIZE_WRONG": (
        "syscalls",
        "a size or offset the target reported is not what its system calls wrote or synced",
    ),
    "FILE_FACT_NOT_MADE": (
        "syscalls",
        "a reported create, truncate or cut of a file does not appear in its system calls",
    ),
    "RENAME_BEFORE_FSYNC": (
        "syscalls",
        "a file was put in place by rename/link before its bytes were fsynced: after a power "
        "loss the name can point at an empty or partial file",
    ),
    "BOUNDARY_NOT_REACHED": ("coverage", "a boundary the scenario declares was never reached"),
    "EXPECTATION_FAILED": ("expect", "a per-boundary expectation of the scenario did not hold"),
    "RESUME_FAILED": ("recovery", "the target could not repair or resume the crashed session"),
    "SESSION_NOT_FOUND": (
        "recovery",
        "the resumed agent could not find the crashed session: it failed, or started afresh "
        "with nothing of the session in its history",
    ),
    "STORE_UNREADABLE": (
        "recovery",
        "the app's own loader could not read the store the crash left (it raised, or never "
        "returned): the app cannot resume, and its persisted state is never read as empty",
    ),
    "NONDETERMINISTIC": (
        "lab",
        "two runs of the same case differed (log, ledger or trace, times and ids normalised): "
        "the target depends on the clock, randomness or scheduling",
    ),
    "DRIFT": ("lab", "the crash run did not reach its kill point the way the reference did"),
    "CHILD_HUNG": ("lab", "the target neither reached its kill point nor exited in time"),
    "REFERENCE_FAILED": ("lab", "the fault-free run of the scenario did not complete"),
    "TRACE_UNSUPPORTED": (
        "lab",
        "the run did file I/O that its system-call trace cannot show (a shared writable mmap, "
        "io_uring, a copy between files, ...): the case that needs that ground truth is not "
        "judged",
    ),
    "BAD_PROBE_REPORT": (
        "lab",
        "the target wrote a probe report that breaks the protocol (not JSON, not an object, "
        "an unknown boundary, no whole-number 'n', a line over 1 MiB)",
    ),
    "NO_BOUNDARY_REPORTED": (
        "coverage",
        "the fault-free run reported no boundary: nothing could be crash-tested",
    ),
    "NOTHING_TESTED": (
        "coverage",
        "the fault-free run never exercised what the scenario is about: a tool its script "
        "calls never ran, or no boundary of a kind the scenario needs (an effect, a store "
        "write) was reached, so its crash cases would pass vacuously",
    ),
    "FAULT_NOT_PLANNED": (
        "coverage",
        "a fault that applies to the scenario got no case: it was never injected",
    ),
    "EXPECTATION_NOT_CHECKED": (
        "coverage",
        "an [[expect]] of the scenario was never checked: no case ran at its occurrence",
    ),
    "FAULT_UNSUPPORTED": (
        "lab",
        "the target does not report the write facts and flush/written boundary this fault needs",
    ),
    # Untrusted input (docs/security.md): what a target wrote that the lab
    # does not read.  (A request that did not come from the case's agent is
    # no violation: it is refused and noted, a FOREIGN_REQUEST gate fact.)
    "TARGET_FILE_REFUSED": (
        "lab",
        "a file the target wrote (its log, its ledger, a session file) is a symlink, a FIFO, a "
        "device or a directory where a regular file belongs: the lab does not read it",
    ),
    "TARGET_OUTPUT_TOO_LARGE": (
        "lab",
        "a file the target wrote is over the lab's limit for it (docs/cli.md, \"Limits\"): "
        "the case is not judged",
    ),
}


# guarantee (or a code with a section of its own) -> (its name, the promise
# in one sentence), word for word the italic line under its heading in
# docs/guarantees.md (a test keeps the two the same).  The console and the
# reports show these.
PROMISES: dict[str, tuple[str, str]] = {
    "G1": ("request envelope",
           "A request that reached the model has its complete `request/header` durable."),
    "G2": ("tool intent", "A tool body that started has its `tool/call` durable."),
    "G3": ("classification",
           "Each unanswered call is `TOOL_NOT_STARTED` exactly when no `tool/call` is durable, "
           "`TOOL_OUTCOME_UNKNOWN` exactly when it is."),
    "G4": ("settled work", "Everything before a completed checkpoint survives."),
    "G5": ("log integrity", "The recovered log is a prefix of what was appended, seqs contiguous."),
    "G6": ("safe retry",
           "Guidance matches tool annotations; after resume, no non-idempotent effect is "
           "applied twice."),
    "G7": ("valid history",
           "Every tool call is answered exactly once, immediately after its assistant message, "
           "results before any text."),
    "G8": ("repair idempotence", "Repairing a repaired log changes nothing."),
    "G9": ("fail-closed",
           "After a failed checkpoint, nothing is dispatched until a checkpoint succeeds."),
    "G10": ("graceful close",
            "A graceful stop persists its closing events and leaves nothing to repair."),
    # Codes whose section in docs/guarantees.md states a promise of its own.
    "DISPATCH_AFTER_CANCEL": ("cancellation",
                              "A tool body does not start once cancellation has landed while "
                              "its checkpoint was pending."),
    "SEQ_FORK": ("one writer",
                 "A second writer on a live session is refused, and the log never forks."),
    "CORRUPTION_IGNORED": ("committed corruption",
                           "A corrupt line in the committed region is reported, never silently "
                           "dropped."),
}  # fmt: skip


# What each checkpoint policy of the reference runtime does not promise
# (docs/guarantees.md, "What each policy promises"): `turn-only` flushes only
# at turn/end, so a crash inside a turn may lose the request header and the
# tool call (G1, G2), a step it went past (`step/durable` names the boundary,
# not a flush) may be lost (G4, steps only), a non-idempotent effect whose call
# was lost is applied again on resume (G6), and no tool checkpoint notices a
# cancellation (G9).
# A reference case failing only with these codes is the policy's known gap,
# not a false alarm; any other code is.
POLICY_GAPS: dict[str, frozenset[str]] = {
    "semantic": frozenset(),
    "every-event": frozenset(),
    "turn-only": frozenset(
        {"REQUEST_ENVELOPE_LOST", "TOOL_INTENT_LOST", "SETTLED_STEP_LOST",
         "SIDE_EFFECT_DUPLICATED", "DISPATCH_AFTER_CANCEL"}
    ),
}  # fmt: skip
# The policies that promise every guarantee.
FULL_POLICIES = tuple(policy for policy, gaps in POLICY_GAPS.items() if not gaps)


def explain(code: str) -> str:
    return GUARANTEES.get(code, ("?", code))[1]


def promise(code: str) -> str:
    """The guarantee `code` breaks, named, with its promise: "G6 safe retry:
    Guidance matches ..."; for a code outside G1-G10, what the code means."""
    guarantee, meaning = GUARANTEES.get(code, ("?", code))
    key = code if code in PROMISES else guarantee
    if key not in PROMISES:
        return f"{guarantee}: {meaning}"
    name, sentence = PROMISES[key]
    return f"{guarantee} {name}: {sentence}"


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken guarantee, with its evidence."""

    code: str
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)

    @property
    def guarantee(self) -> str:
        return GUARANTEES.get(self.code, ("?", ""))[0]

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "guarantee": self.guarantee,
            "message": self.message,
            "evidence": self.evidence,
        }
