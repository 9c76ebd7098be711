"""The verdicts of `faultlab explore --app` reports, tabled and checked.

Issue 32 asks for no false alarm on correct framework apps. For each report
directory given (`--report-dir` of an `explore --app` run; its newest run,
`latest`), this prints one Markdown row per resume style with one column
per mode: the cases, how many failed and with which codes. With `--check`
it re-derives each failure's codes from the raw files its folder keeps
(the world ledger, the gate's records, the stored thread at the kill and
at the end), not from the oracle, and lists every code those files do not
back: a code with no evidence would be a false alarm.

    python benchmarks/app_verdicts.py --modes exit,async,sync reports/verify-apps/lg-example
    python benchmarks/app_verdicts.py --check reports/verify-apps/*/

What the files back, per code: `SIDE_EFFECT_DUPLICATED` more ledger
lines than the fault-free run's (`references/`); `UNKNOWN_OUTCOME_RERUN` a
call id whose body started in the crashed child and again in the recovery;
`TOOL_INTENT_LOST` a call whose body started that the thread at the kill
does not hold; `PROVIDER_INVALID_HISTORY` a request the scripted model
rejected, or a call the final thread leaves unanswered before its next
message; `DISPATCH_AFTER_FAILED_CHECKPOINT` a model call or tool start
after the failed write; `RESUME_FAILED` a recovery that exited non-zero, or
a final thread that ends on an unanswered call.
Other codes are counted, not checked. Prints; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

__all__ = ["check_failures", "main", "rows"]

SHORT = {"TOOL_INTENT_LOST": "INTENT", "UNKNOWN_OUTCOME_RERUN": "RERUN",
         "SIDE_EFFECT_DUPLICATED": "DUP", "PROVIDER_INVALID_HISTORY": "INVALID",
         "RESUME_FAILED": "FAILED", "REPAIR_MISCLASSIFIED": "MISCLASS",
         "DISPATCH_AFTER_FAILED_CHECKPOINT": "DISPATCH", "SEQ_FORK": "FORK",
         "CHILD_HUNG": "HUNG"}  # fmt: skip
STYLES = ("coverage", "resume", "resend", "hook", "repair", "invocation", "second writer")


def _cases(report: Path) -> list[dict[str, Any]]:
    lines = (report / "latest" / "cases.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _key(fault: str) -> tuple[str, str]:
    """(style, mode) of a case's fault FAULT/STYLE/MODE."""
    parts = fault.split("/")
    if parts[0] == "reference":
        return "coverage", parts[-1]
    return ("second writer" if parts[0] == "second-writer" else parts[1]), parts[2]


def rows(report: Path, modes: list[str], label: str) -> list[str]:
    """One Markdown row per style: `cases / failed (codes)` per mode."""
    groups: dict[tuple[str, str], tuple[list[int], Counter[str]]] = defaultdict(
        lambda: ([0, 0], Counter())
    )
    for case in _cases(report):
        counts, codes = groups[_key(str(case["fault"]))]
        counts[0] += 1
        if case["verdict"] != "pass":
            counts[1] += 1
            codes.update(SHORT.get(c, c) for c in case["codes"] or [case["verdict"]])
    out = []
    for style in [s for s in STYLES if any(k[0] == s for k in groups)]:
        cells = []
        for mode in modes:
            if (style, mode) not in groups:
                cells.append("")
                continue
            (n, bad), codes = groups[(style, mode)]
            listed = " ".join(f"{k} {v}" for k, v in codes.most_common())
            cells.append(f"{n} / {bad}" + (f" ({listed})" if bad else ""))
        out.append(f"| {label} | {style} | " + " | ".join(cells) + " |")
    return out


def _json_lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _history(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return list(json.loads(path.read_text()).get("history", []))


def _unanswered(history: list[dict[str, Any]]) -> list[str]:
    """Calls no tool result answers before the next other message."""
    out = []
    for i, message in enumerate(history):
        for call in message.get("calls", []):
            answered = False
            for later in history[i + 1 :]:
                if later.get("role") != "tool":
                    break
                if later.get("callId") == call["id"]:
                    answered = True
                    break
            if not answered:
                out.append(str(call["id"]))
    return out


def _reference_effects(report: Path, scenario: str) -> int | None:
    """Ledger lines of the fault-free run of `scenario`, if the report kept it."""
    ledger = report / "latest" / "references" / f"{scenario}.ledger.jsonl"
    return len(_json_lines(ledger)) if ledger.exists() else None


def _backed(code: str, case: dict[str, Any], folder: Path, report: Path) -> bool | None:
    """Whether the folder's raw files show `code` (None: not checked)."""
    records = _json_lines(folder / "records.jsonl")
    starts = [i for i, r in enumerate(records) if r.get("fact") == "app/start"
              and r.get("action") != "read"]  # fmt: skip
    cut = starts[1] if len(starts) > 1 else len(records)
    crash, resume = records[:cut], records[cut:]
    first = {r["callId"] for r in crash if r.get("boundary") == "tool/started"}
    again = {r["callId"] for r in resume if r.get("boundary") == "tool/started"}
    final = _history(folder / "final.thread.json")
    if code == "SIDE_EFFECT_DUPLICATED":
        expected = _reference_effects(report, str(case["id"]).split("::")[0])
        return None if expected is None else len(_json_lines(folder / "world.jsonl")) > expected
    if code == "UNKNOWN_OUTCOME_RERUN":
        return bool(first & again)
    if code == "TOOL_INTENT_LOST":
        at_kill = _history(folder / "at-kill.thread.json")
        held = {c["id"] for m in at_kill for c in m.get("calls", [])}
        return bool(first - held)
    if code == "PROVIDER_INVALID_HISTORY":
        return any(r.get("fact") == "model/rejected" for r in resume) or bool(_unanswered(final))
    if code == "DISPATCH_AFTER_FAILED_CHECKPOINT":
        failed = next((i for i, r in enumerate(crash) if r.get("fact") == "app/ioerror"), None)
        return failed is not None and any(
            r.get("boundary") in ("model/request", "tool/started") for r in crash[failed:]
        )
    if code == "RESUME_FAILED":
        exits = [r.get("status") for r in resume if r.get("fact") == "app/exit"]
        return bool(_unanswered(final)) or any(s not in (0, None) for s in exits[:1])
    return None


def check_failures(report: Path) -> tuple[Counter[str], list[str]]:
    """Codes checked per code, and the ones the raw files do not back."""
    checked: Counter[str] = Counter()
    unbacked = []
    for case in _cases(report):
        if case["verdict"] == "pass" or not case.get("artifacts", {}).get("dir"):
            continue
        scenario, _, rest = str(case["id"]).partition("::")
        occurrence, _, fault = rest.partition("[")
        slug = "_".join((scenario, occurrence.replace("/", "_").replace("#", "_"),
                         fault.rstrip("]").replace("/", "_")))  # fmt: skip
        folder = report / "latest" / "failures" / slug
        for code in case["codes"]:
            backed = _backed(code, case, folder, report) if folder.exists() else False
            if backed is None:
                continue
            checked[code] += 1
            if not backed:
                unbacked.append(f"{case['id']}: {code}")
    return checked, unbacked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", type=Path)
    parser.add_argument("--modes", default="run", help="the mode columns, comma-separated")
    parser.add_argument("--check", action="store_true", help="check each failure's codes")
    args = parser.parse_args()
    for report in args.reports:
        if not (report / "latest" / "cases.jsonl").exists():
            print(f"{report.name}: no finished run")
            continue
        if args.check:
            checked, unbacked = check_failures(report)
            print(f"{report.name}: {sum(checked.values())} code(s) checked "
                  f"({dict(checked)}), {len(unbacked)} not backed")  # fmt: skip
            for line in unbacked:
                print(f"  NOT BACKED {line}")
        else:
            print("\n".join(rows(report, args.modes.split(","), report.name)))


if __name__ == "__main__":
    main()
