# The reported file facts checked against the system's, on hand-made traces
# (tests/integration/test_syscall_truth.py does it with a real strace): a
# truthful target has no disagreement and the same crash states either way;
# each kind of lie is its own code, placed at the report it concerns.
from __future__ import annotations

from dataclasses import replace
from typing import Any

from power_runs import LOG, Run

from faultlab.lab.faults.powerstates import derive_states, file_trace
from faultlab.lab.faults.systruth import check_reported_facts, reported_disagreements
from faultlab.lab.process.reference import Reference

TMP = "/s/.session.jsonl.tmp"


def truthful(trace: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The system calls a target that reports the truth makes, each just
    before the report of it (as the reference runtime does)."""
    facts: list[dict[str, Any]] = []
    for index, message in enumerate(trace):
        kind = message.get("fact")
        if kind == "create":
            size = message["size"]
            facts += [
                {"fact": "create", "file": TMP, "size": 0, "after": index},
                {"fact": "write", "file": TMP, "offset": 0, "bytes": size, "after": index},
                {"fact": "fsync", "file": TMP, "size": size, "after": index},
                {"fact": "link", "file": LOG, "source": TMP, "after": index},
                {"fact": "unlink", "file": TMP, "after": index},
            ]
        elif kind in ("write", "fsync", "dirsync"):
            facts.append({**message, "after": index})
    return facts


def sized(facts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """As the parser does: an fsync's size is what the system calls had
    written to that file by then, not what the target says."""
    sizes: dict[str, int] = {}
    out = []
    for fact in facts:
        if fact["fact"] == "write":
            sizes[fact["file"]] = max(sizes.get(fact["file"], 0), fact["offset"] + fact["bytes"])
        elif fact["fact"] == "link":
            sizes[fact["file"]] = sizes.get(fact["source"], 0)
        elif fact["fact"] == "fsync":
            fact = {**fact, "size": sizes.get(fact["file"], 0)}
        out.append(fact)
    return out


def traced(run: Run, facts: list[dict[str, Any]]) -> Reference:
    return replace(run.reference(), ground_truth="syscalls", syscalls=tuple(sized(facts)))


def codes(reference: Reference) -> list[tuple[int, str]]:
    return [(index, v.code) for index, v in reported_disagreements(reference)]


def made() -> tuple[Run, list[dict[str, Any]]]:
    run = Run()
    run.turn()
    return run, truthful(run.trace)


def index_of(run: Run, kind: str, n: int = 1) -> int:
    found = [i for i, m in enumerate(run.trace) if m.get("fact") == kind]
    return found[n - 1]


def test_a_truthful_target_has_no_disagreement_and_the_same_states() -> None:
    run, facts = made()
    reference = traced(run, facts)
    assert codes(reference) == []
    system = file_trace(reference)
    assert not any("after" not in m for m in system if m.get("fact") in ("write", "fsync"))
    for k in (1, 2, 3):
        for torn in (False, True):  # power-loss, torn-write
            by_system = derive_states(reference, f"flush/written#{k}", torn=torn)
            by_facts = derive_states(run.reference(), f"flush/written#{k}", torn=torn)
            assert [(s.label, s.log) for s in by_system] == [(s.label, s.log) for s in by_facts]


def test_without_the_trace_nothing_is_checked() -> None:
    run, facts = made()
    lying = [f for f in facts if f["fact"] != "fsync"]
    assert reported_disagreements(replace(traced(run, lying), ground_truth="facts")) == []


def test_an_fsync_that_was_never_made() -> None:
    run, facts = made()
    second = index_of(run, "fsync", 2)
    facts = [f for f in facts if not (f["fact"] == "fsync" and f["after"] == second)]
    assert codes(traced(run, facts)) == [(second, "FSYNC_NOT_MADE")]


def test_an_fsync_of_the_wrong_file() -> None:
    run, facts = made()
    facts = [{**f, "file": LOG + ".lock"} if f["fact"] == "fsync" and f["file"] == LOG else f
             for f in facts]  # fmt: skip
    reference = traced(run, facts)
    fsyncs = [i for i, m in enumerate(run.trace) if m.get("fact") == "fsync"]
    assert codes(reference) == [(i, "FSYNC_WRONG_FILE") for i in fsyncs]
    # ... and the states the system shows lose what the facts call durable.
    states = derive_states(reference, "flush/written#3", torn=False)
    assert states[0].log is not None and states[0].log.count(b"\n") == 1  # the header


def test_a_dirsync_that_was_never_made_leaves_the_log_vanishing() -> None:
    run, facts = made()
    facts = [f for f in facts if f["fact"] != "dirsync"]
    reference = traced(run, facts)
    assert codes(reference) == [(index_of(run, "dirsync"), "DIRSYNC_NOT_MADE")]
    assert derive_states(reference, "flush/written#2", torn=False)[0].label == "vanished"


def test_a_write_never_made_and_a_size_not_what_was_written() -> None:
    run, facts = made()
    first_write = index_of(run, "write", 1)
    second_write = index_of(run, "write", 2)
    dropped = [f for f in facts if not (f["fact"] == "write" and f["after"] == first_write)]
    found = codes(traced(run, dropped))
    assert (first_write, "WRITE_NOT_MADE") in found
    # the flush/written after it claims a size the system never wrote
    assert (first_write + 1, "REPORTED_SIZE_WRONG") in found
    shorter = [{**f, "bytes": f["bytes"] - 1} if f["fact"] == "write" and
               f["after"] == second_write else f for f in facts]  # fmt: skip
    assert (second_write, "REPORTED_SIZE_WRONG") in codes(traced(run, shorter))


def test_a_reported_truncate_the_system_did_not_make() -> None:
    run, facts = made()
    run.trace.append({"fact": "truncate", "file": LOG, "size": 10})
    assert codes(traced(run, facts)) == [(len(run.trace) - 1, "FILE_FACT_NOT_MADE")]


def test_a_temp_file_linked_before_its_fsync() -> None:
    run, facts = made()
    facts = [f for f in facts if not (f["fact"] == "fsync" and f["file"] == TMP)]
    reference = traced(run, facts)
    found = reported_disagreements(reference)
    assert [(i, v.code) for i, v in found] == [(0, "RENAME_BEFORE_FSYNC")]
    assert found[0][1].evidence["source"] == TMP and found[0][1].evidence["synced"] == 0
    # at flush/written#1 the durable log is empty: the name without its bytes
    assert derive_states(reference, "flush/written#1", torn=False)[0].log == b""


def test_a_case_reports_only_the_disagreements_up_to_its_crash_point() -> None:
    run, facts = made()
    last = index_of(run, "fsync", 3)
    facts = [f for f in facts if not (f["fact"] == "fsync" and f["after"] == last)]
    reference = traced(run, facts)
    assert check_reported_facts(reference, last - 1) == []
    assert [v.code for v in check_reported_facts(reference, last)] == ["FSYNC_NOT_MADE"]
