# The console's grouped failures (faultlab.lab.report.console): the promise
# texts are docs/guarantees.md's, the double charge reads as words, groups
# count and name their cases, colour follows --color and NO_COLOR.  Pure
# functions over values: no process.
from __future__ import annotations

import re
from pathlib import Path

import pytest

from faultlab.lab.campaigns.selftest import SelftestRow
from faultlab.lab.oracle.case import Case, CaseResult
from faultlab.lab.oracle.codes import GUARANTEES, PROMISES, Violation, promise
from faultlab.lab.report.console import (
    Style,
    duration,
    group_failures,
    harm_in_words,
    progress_text,
    render_failures,
    render_selftest_problems,
    use_color,
    where_to_look,
)

DOCS = Path(__file__).resolve().parents[4] / "docs" / "guarantees.md"
DOUBLE = Violation(
    "SIDE_EFFECT_DUPLICATED", "call c1 (charge_card) was applied 2 times",
    {"tool": "charge_card", "callId": "c1", "count": 2, "arguments": {"amount": 40},
     "referenceCount": 1},
)  # fmt: skip
LOST = Violation("TOOL_INTENT_LOST", "the body of c1 started but its tool/call was not in the log")


def failing(occurrence: str, *violations: Violation) -> CaseResult:
    case = Case("/s/payment.toml", occurrence, "sigkill")
    return CaseResult(case, "fail", violations, artifacts={"dir": "/work/x"})


def replay(result: CaseResult) -> str:
    return f"faultlab replay {result.case.id!r}"


def test_every_promise_is_the_italic_line_of_docs_guarantees() -> None:
    text = re.sub(r"\s+", " ", DOCS.read_text(encoding="utf-8"))
    for key, (name, sentence) in PROMISES.items():
        italic = f"*{sentence}*" if not sentence.endswith("dropped.") else f"*{sentence[:-1]}*"
        assert italic in text, (key, sentence)
        if key.startswith("G"):
            assert f"## {key} {name}" in text


def test_promise_names_the_guarantee_and_falls_back_to_the_codes_meaning() -> None:
    assert promise("SIDE_EFFECT_DUPLICATED").startswith("G6 safe retry: Guidance matches")
    assert promise("DISPATCH_AFTER_CANCEL").startswith("G9 cancellation: A tool body")
    assert promise("CHILD_HUNG") == f"lab: {GUARANTEES['CHILD_HUNG'][1]}"


def test_a_double_charge_reads_as_words() -> None:
    assert harm_in_words(DOUBLE) == (
        'charge_card {"amount":40} applied 2 times after resume; once without the crash'
    )
    assert harm_in_words(LOST) == LOST.message  # the message is already words


def test_groups_count_cases_name_the_first_and_put_the_world_harm_first() -> None:
    results = [failing(f"model/chunk#{n}", LOST) for n in range(1, 6)]
    results.append(failing("tool/effect#1", LOST, DOUBLE))
    groups = group_failures(results, replay=replay, report=Path("/r/run"))
    assert [g.code for g in groups] == ["SIDE_EFFECT_DUPLICATED", "TOOL_INTENT_LOST"]
    double, lost = groups
    assert double.case_ids == ("payment.toml::tool/effect#1[sigkill]",)
    assert double.look_at == ("world-ledger.jsonl", "final.jsonl")
    assert double.where == "/r/run/failures/payment.toml_tool_effect_1_sigkill"
    assert len(lost.case_ids) == 6 and lost.look_at[0] == "crashed.jsonl"
    assert lost.replay == "faultlab replay 'payment.toml::model/chunk#1[sigkill]'"
    lines = render_failures(groups)
    text = "\n".join(lines)
    assert "applied 2 times after resume; once without the crash" in text
    assert "G2 tool intent: A tool body that started has its `tool/call` durable." in text
    assert "and 3 more" in text
    assert text.count("replay:") == 2
    quiet = render_failures(groups, verbosity=-1)
    assert len(quiet) == 4 and quiet[0].startswith("FAIL SIDE_EFFECT_DUPLICATED: 1 case(s)")
    verbose = "\n".join(render_failures(groups, verbosity=1))
    assert "model/chunk#5" in verbose and "more" not in verbose


def test_a_case_without_violations_is_grouped_by_its_verdict() -> None:
    hung = CaseResult(Case("/s/a.toml", "tool/durable#1"), "hung", detail="no exit in 60s")
    (group,) = group_failures([hung], replay=replay)
    assert group.code == "HUNG" and group.harms == ("no exit in 60s",) and group.where == ""


def test_where_to_look_sends_a_loss_to_the_crashed_log() -> None:
    assert where_to_look("REQUEST_ENVELOPE_LOST")[0] == "crashed.jsonl"
    assert where_to_look("REPAIR_MISCLASSIFIED") == ("repaired.jsonl",)
    assert where_to_look("RESUME_FAILED") == ("repair.stderr", "resume.stderr")


@pytest.mark.parametrize(
    ("choice", "tty", "env", "expected"),
    [
        ("auto", True, {}, True),
        ("auto", False, {}, False),
        ("auto", True, {"NO_COLOR": "1"}, False),
        ("auto", True, {"NO_COLOR": ""}, True),
        ("auto", True, {"TERM": "dumb"}, False),
        ("always", False, {"NO_COLOR": "1"}, True),
        ("never", True, {}, False),
    ],
)
def test_colour_follows_the_option_and_no_color(
    choice: str, tty: bool, env: dict[str, str], expected: bool
) -> None:
    assert use_color(choice, isatty=tty, environ=env) is expected


def test_style_paints_only_when_coloured() -> None:
    assert Style(True)("FAIL", "fail") == "\x1b[1;31mFAIL\x1b[0m"
    assert Style(False)("FAIL", "fail") == "FAIL"
    with pytest.raises(ValueError, match="auto, always or never"):
        use_color("sometimes", isatty=True)


def test_progress_estimates_the_time_left_once_the_run_is_long() -> None:
    assert progress_text(10, 100, 2, 1.0) == "[10/100] 2 failing"
    assert progress_text(10, 100, 2, 20.0) == "[10/100] 2 failing, about 3m00s left"
    assert progress_text(100, 100, 2, 20.0, "pass x") == "[100/100] 2 failing  pass x"
    assert (duration(59), duration(61), duration(3725)) == ("59s", "1m01s", "1h02m")


def test_selftest_problems_are_grouped_with_the_guarantee_and_a_rerun() -> None:
    rows = [
        SelftestRow("repair_says_safe", "quick", ("UNSAFE_RETRY_GUIDANCE",), "missed", None, 3, 0),
        SelftestRow("no_turn_end_flush", "quick", ("COMPLETED_TURN_LOST",), "detected",
                    "x", 3, 1),
    ]  # fmt: skip
    text = "\n".join(render_selftest_problems(rows))
    assert "MISSED UNSAFE_RETRY_GUIDANCE: 1 variant(s)" in text
    assert "G6 safe retry" in text
    assert "faultlab selftest --variants repair_says_safe --quick" in text
    assert "no_turn_end_flush" not in text
