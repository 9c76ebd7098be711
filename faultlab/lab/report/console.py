# What a person reads at the end of a run on the console: the failing cases
# grouped by violation code, each group with the guarantee it breaks (the
# promise of oracle/codes.py, the one place the texts live), the harm in plain
# words from the first case's evidence, the log that shows it, how many cases
# and which, and one replay command.  Plain functions returning lines, so the
# CLI only prints them and tests call them without a terminal; colour is a
# `Style` the caller chooses (`use_color`).
from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from faultlab.lab.oracle.case import CaseResult
from faultlab.lab.oracle.codes import GUARANTEES, Violation, explain, promise
from faultlab.lab.process.reference import slug
from faultlab.lab.report.serverjudged import SERVER_PROMISES, judged_on_servers, server_files

__all__ = [
    "FailureGroup",
    "Style",
    "duration",
    "group_failures",
    "harm_in_words",
    "progress_text",
    "render_failures",
    "render_selftest_problems",
    "times",
    "use_color",
    "where_to_look",
]

_CODES_ORDER = {code: rank for rank, code in enumerate(GUARANTEES)}
# Harm outside the log (a card charged twice, a model told a retry is safe)
# is shown first, before the losses that cause it.
_WORLD_HARM = frozenset({"SIDE_EFFECT_DUPLICATED", "UNSAFE_RETRY_GUIDANCE"})


def use_color(choice: str, *, isatty: bool, environ: Mapping[str, str] | None = None) -> bool:
    """`--color auto|always|never`: auto colours a terminal unless NO_COLOR is
    set to anything non-empty (no-color.org) or TERM is dumb."""
    if choice not in ("auto", "always", "never"):
        raise ValueError(f"--color must be auto, always or never, not {choice!r}")
    if choice != "auto":
        return choice == "always"
    env = os.environ if environ is None else environ
    return isatty and not env.get("NO_COLOR") and env.get("TERM") != "dumb"


_SGR = {"fail": "1;31", "pass": "32", "code": "1;33", "dim": "2", "bold": "1", "warn": "33"}


@dataclass(frozen=True, slots=True)
class Style:
    """ANSI colour for a terminal, or none."""

    color: bool = False

    def __call__(self, text: str, role: str) -> str:
        if not self.color or role not in _SGR:
            return text
        return f"\x1b[{_SGR[role]}m{text}\x1b[0m"

    def verdict(self, verdict: str) -> str:
        role = {"pass": "pass", "unsupported": "warn"}.get(verdict, "fail")
        return self(verdict.upper(), role)


def times(n: int) -> str:
    return {0: "never", 1: "once", 2: "twice"}.get(n, f"{n} times")


def harm_in_words(violation: Violation) -> str:
    """The harm of one violation in plain words, from its evidence where the
    message alone would not say it (a duplicated effect: what, how often, and
    how often without the crash)."""
    evidence = violation.evidence
    if violation.code == "SIDE_EFFECT_DUPLICATED" and "arguments" in evidence:
        arguments = orjson.dumps(evidence["arguments"], option=orjson.OPT_SORT_KEYS).decode()
        count = int(evidence.get("count", 2))
        reference = int(evidence.get("referenceCount", 1))
        return (f"{evidence.get('tool')} {arguments} applied {count} times after resume; "
                f"{times(reference)} without the crash")  # fmt: skip
    return violation.message


# Which artifact of a failure (failures/<case>/) shows the problem: a loss is
# seen in what survived the crash, a repair's mistake in the repaired log, a
# duplicated effect in the world ledger against the final log.
_LOOK: dict[str, tuple[str, ...]] = {
    "G1": ("crashed.jsonl", "trace.jsonl"),
    "G2": ("crashed.jsonl", "trace.jsonl"),
    "G3": ("repaired.jsonl",),
    "G4": ("crashed.jsonl",),
    "G5": ("crashed.jsonl", "final.jsonl"),
    "G7": ("repaired.jsonl", "final.jsonl"),
    "G8": ("repaired.jsonl",),
    "G9": ("crashed.jsonl", "trace.jsonl"),
    "G10": ("crashed.jsonl",),
    "recovery": ("repair.stderr", "resume.stderr"),
    "lab": ("crash.stderr", "trace.jsonl"),
}
_LOOK_CODE = {
    "SIDE_EFFECT_DUPLICATED": ("world-ledger.jsonl", "final.jsonl"),
    "UNSAFE_RETRY_GUIDANCE": ("repaired.jsonl",),
}


# What the same artifact is called in a drive's failure folder that keeps
# other files (an app case: the gate's records, the thread read with the
# framework's serializer at the kill and at the end, each child's output).
_ALIASES: dict[str, tuple[str, ...]] = {
    "crashed.jsonl": ("at-kill.thread.json",),
    "repaired.jsonl": ("final.thread.json",),
    "final.jsonl": ("final.thread.json",),
    "world-ledger.jsonl": ("world.jsonl",),
    "trace.jsonl": ("records.jsonl",),
    "crash.stderr": ("run1-run.stderr",),
    "repair.stderr": ("run2-*.stderr",),
    "resume.stderr": ("run2-*.stderr",),
}


# Lines of a failed run's output (its traceback's end) the console shows.
_OUTPUT_LINES = 12


def where_to_look(code: str, folder: Path | None = None) -> tuple[str, ...]:
    """The artifacts of a failure that show `code`'s problem, most telling
    first; given the failure's `folder`, only files it holds (a drive's own
    name for the same artifact where it keeps another)."""
    if code in _LOOK_CODE:
        names = _LOOK_CODE[code]
    else:
        names = _LOOK.get(GUARANTEES.get(code, ("?", ""))[0], ("violations.json",))
    if folder is None or not folder.is_dir():
        return names
    found: list[str] = []
    for name in names:
        for candidate in (name, *_ALIASES.get(name, ())):
            hits = sorted(p.name for p in folder.glob(candidate) if p.is_file())
            if hits:
                found.append(hits[-1])
                break
    return tuple(dict.fromkeys(found)) or ("violations.json",)


@dataclass(frozen=True, slots=True)
class FailureGroup:
    """The failing cases that share one violation code (or, for cases that did
    not finish, one verdict)."""

    code: str
    promise: str  # "G6 safe retry: Guidance matches ..."
    meaning: str  # what the code means (oracle/codes.py)
    harms: tuple[str, ...]  # distinct harms in words, the first case's first
    case_ids: tuple[str, ...]
    replay: str  # the first case's replay command
    look_at: tuple[str, ...]  # names of the artifacts that show it
    where: str  # the first case's artifact directory ("" when none was kept)
    output: str = ""  # the first case's failed run's output (a traceback), when kept

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "promise": self.promise, "meaning": self.meaning,
                "harms": list(self.harms), "cases": list(self.case_ids),
                "replay": self.replay, "lookAt": list(self.look_at),
                "where": self.where, "output": self.output}  # fmt: skip


def group_failures(
    failing: Sequence[CaseResult], *, replay: Callable[[CaseResult], str],
    report: Path | None = None,
) -> list[FailureGroup]:  # fmt: skip
    """Failing cases (in case order) grouped by code, the most frequent code
    first; a case with no violation (hung, error) is grouped by its verdict.
    `report` (a run's directory) makes `look_at` paths into it."""
    by_code: dict[str, list[tuple[CaseResult, Violation | None]]] = {}
    for result in failing:
        if not result.violations:
            by_code.setdefault(result.verdict.upper(), []).append((result, None))
        seen: set[str] = set()
        for violation in result.violations:
            if violation.code not in seen:
                seen.add(violation.code)
                by_code.setdefault(violation.code, []).append((result, violation))
    groups = []
    for code, members in by_code.items():
        harms: list[str] = []
        for member, found in members:
            text = harm_in_words(found) if found else (member.detail or member.verdict)
            if text not in harms:
                harms.append(text)
        first = members[0][0]
        where = ""
        folder = Path(first.artifacts["dir"]) if "dir" in first.artifacts else None
        kept = report / "failures" / slug(first.case.id) if report is not None else None
        if kept is not None and ("dir" in first.artifacts or kept.is_dir()):
            where = str(kept)
            folder = kept if kept.is_dir() else folder

        guarantee = promise(code) if code in GUARANTEES else f"{code}: the case did not finish"
        found = members[0][1]
        output = found.evidence.get("output") if found is not None else None
        # Without a kept directory a failure's folder holds its violations.
        look = (where_to_look(code, folder) if "dir" in first.artifacts
                else ("violations.json",))  # fmt: skip
        if judged_on_servers(first):  # a black-box case: its own meaning, its own files
            guarantee = SERVER_PROMISES.get(code, guarantee)
            look = tuple(server_files(first, (code,)))
        groups.append(FailureGroup(
            code=code, promise=guarantee, meaning=explain(code), harms=tuple(harms),
            case_ids=tuple(r.case.id for r, _ in members), replay=replay(first),
            look_at=look, where=where, output=output if isinstance(output, str) else "",
        ))  # fmt: skip
    groups.sort(key=lambda g: (g.code not in _WORLD_HARM, -len(g.case_ids),
                               _CODES_ORDER.get(g.code, len(_CODES_ORDER))))  # fmt: skip
    return groups


def render_failures(
    groups: Sequence[FailureGroup], *, style: Style | None = None, verbosity: int = 0,
    shown: int = 3,
) -> list[str]:  # fmt: skip
    """Console lines for `groups`: with verbosity < 0 one line per code and
    its replay; 0 the guarantee, the first harm, `shown` case ids and the
    replay; > 0 every harm and every case id."""
    paint = style or Style()
    lines: list[str] = []
    for group in groups:
        count = len(group.case_ids)
        head = f"{paint('FAIL', 'fail')} {paint(group.code, 'code')}: {count} case(s)"
        if verbosity < 0:
            lines += [head, f"  replay:  {group.replay}"]
            continue
        lines += ["", head, f"  broke:   {group.promise}"]
        harms = group.harms if verbosity > 0 else group.harms[:1]
        lines += [f"  harm:    {harm}" for harm in harms]
        if len(group.harms) > len(harms):
            lines.append(paint(f"           (and {len(group.harms) - len(harms)} other "
                               "harm(s) of this code; -v lists them)", "dim"))  # fmt: skip
        ids = group.case_ids if verbosity > 0 else group.case_ids[:shown]
        more = count - len(ids)
        lines.append("  cases:   " + ", ".join(ids) + (f", and {more} more" if more else ""))
        if group.output:
            tail = group.output.splitlines()[-_OUTPUT_LINES:]
            lines += ["  output:", *(f"    {line}" for line in tail)]
        lines.append(f"  look at: {', '.join(group.look_at)}"
                     + (f" in {group.where}/" if group.where else ""))
        lines.append(f"  replay:  {paint(group.replay, 'bold')}")
    return lines


def duration(seconds: float) -> str:
    """45s, 3m05s, 1h02m."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def progress_text(done: int, total: int, failing: int, elapsed: float, current: str = "") -> str:
    """One progress line: the count, the failures so far, and once the run
    has gone on for a few seconds an estimate of the time left (the mean
    time per case so far times the cases left)."""
    line = f"[{done}/{total}] {failing} failing"
    left = elapsed / done * (total - done) if done else 0.0
    if 0 < done < total and elapsed >= 3.0 and left >= 1.0:
        line += f", about {duration(left)} left"
    return f"{line}  {current}" if current else line


_SELFTEST_HARM = {
    "missed": "the oracle let a broken runtime pass: this guarantee is not really checked",
    "wrong-code": "the oracle caught a broken runtime but named another code",
    "false-alarm": "the oracle failed the reference runtime, which keeps every guarantee",
}


def render_selftest_problems(
    rows: Sequence[Any], *, style: Style | None = None, shown: int = 3
) -> list[str]:
    """The selftest's bad rows (SelftestRow: missed, wrong code, false alarm)
    grouped by status and expected code, each with the guarantee it is about
    and the command that reruns the first variant."""
    paint = style or Style()
    groups: dict[tuple[str, str], list[Any]] = {}
    for row in rows:
        if row.status in _SELFTEST_HARM:
            code = row.expected[0] if row.expected else next(iter(row.codes), "?")
            groups.setdefault((row.status, code), []).append(row)
    lines: list[str] = []
    for (status, code), members in groups.items():
        names = [f"{r.variant} [{r.stage}]" for r in members]
        more = len(names) - shown
        found = ", ".join(sorted({c for r in members for c in r.codes})) or "none"
        first = members[0]
        lines += [
            "", f"{paint(status.upper(), 'fail')} {paint(code, 'code')}: {len(members)} variant(s)",
            f"  about:   {promise(code)}",
            f"  harm:    {_SELFTEST_HARM[status]} (codes found: {found})",
            "  which:   " + ", ".join(names[:shown]) + (f", and {more} more" if more > 0 else ""),
            f"  rerun:   faultlab selftest --variants {first.variant}"
            + (" --quick" if first.stage == "quick" else ""),
        ]  # fmt: skip
    return lines
