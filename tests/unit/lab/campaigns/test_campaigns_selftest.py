# The selftest's pure parts: the zoo registry's validation (one-line errors
# naming file, entry and field), the selection of variants, and the verdict of
# a row from case results (detected, missed, wrong-code; clean, false-alarm).
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from click.testing import CliRunner

from faultlab.cli import main
from faultlab.lab.campaigns.selftest import (
    SelftestResult,
    fuzz_campaign,
    judge_reference,
    judge_variant,
)
from faultlab.lab.campaigns.selftestforeign import foreign_cases, foreign_row
from faultlab.lab.campaigns.zoo import default_zoo_path, load_zoo
from faultlab.lab.errors import LabUsageError
from faultlab.lab.oracle.case import Case, CaseResult
from faultlab.lab.oracle.codes import Violation

VARIANTS = Path(__file__).resolve().parents[3] / "variants"
GOOD = """format = 1
[[variant]]
name = "repair_says_safe"
bug = "b"
expect = ["UNSAFE_RETRY_GUIDANCE"]
scenarios = ["payment.toml"]
quick = [{ scenario = "payment.toml", at = "tool/durable", fault = "sigkill" }]
"""


def registry(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "zoo.toml"
    path.write_text(text)
    (tmp_path / "repair_says_safe.py").write_text("")
    return path


def test_a_good_registry_resolves_scripts_scenarios_and_cases(tmp_path: Path) -> None:
    zoo = load_zoo(registry(tmp_path, GOOD))
    (variant,) = zoo.variants
    assert variant.script == (tmp_path / "repair_says_safe.py").resolve()
    assert variant.scenarios[0].name == "payment.toml" and variant.scenarios[0].is_file()
    assert [c.id for c in variant.quick] == ["payment.toml::tool/durable#1[sigkill]"]
    assert len(variant.faults) > 1 and variant.fuzz_examples is None


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (("UNSAFE_RETRY_GUIDANCE", "UNSAFE"), "repair_says_safe: field 'expect': unknown code"),
        (('"payment.toml"]\nquick', '"no.toml"]\nquick'), "'scenarios': no scenario 'no.toml'"),
        (('fault = "sigkill"', 'fault = "frost"'), "quick 1: field 'fault': unknown fault 'frost'"),
        (('at = "tool/durable"', 'at = "tool/durible"'), "quick 1: field 'at': unknown boundary"),
        (('bug = "b"', 'bug = "b"\ncolour = 1'), "field 'colour': unknown field"),
        (('bug = "b"\n', ""), "field 'bug': required"),
        (("format = 1", "format = 2"), "top level: field 'format': must be 1"),
        (('name = "repair_says_safe"', 'name = "other"'), "field 'script':"),
        (('expect = ["UNSAFE_RETRY_GUIDANCE"]', "expect = []"), "'expect': required, a non-empty"),
        (('bug = "b"', 'bug = "b"\nexplore = false'), "'explore': false needs a fuzz campaign"),
        (('bug = "b"', 'bug = "b"\nexplore = "no"'), "'explore': must be true or false"),
        (('bug = "b"', 'bug = "b"\nbackend = "csv"'), "'backend': unknown backend 'csv'"),
        (('bug = "b"', 'bug = "b"\ndrive = "tcp"'), "'drive': unknown drive 'tcp'"),
        (('bug = "b"', 'bug = "b"\ndrive = "acp"\nfaults = ["io-error"]'),
         "field 'faults': unknown fault 'io-error' for the acp drive (its faults: sigkill, "
         "sigterm, acp-cancel, double-sigkill)"),
        (('fault = "sigkill"', 'fault = "sigkill", check_determinism = 1'), "must be true or"),
        (("format = 1", 'format = 1\n[[foreign]]\nname = "n"\ninterpreter = "node"'),
         "foreign n: field 'script': required"),
        (("format = 1", 'format = 1\n[[foreign]]\nname = "n"\ninterpreter = "node"\n'
          'script = "missing.js"'), "missing.js does not exist"),
        (("format = 1", 'format = 1\n[[foreign]]\nname = "n"\ninterpreter = "node"\n'
          'script = "zoo.toml"\nbackends = ["csv"]'), "foreign n: field 'backends': unknown"),
        (("format = 1", 'format = 1\nforeign = 3'), "field 'foreign': must be a list"),
    ],
)
def test_a_bad_registry_is_one_line_naming_the_field(
    tmp_path: Path, edit: tuple[str, str], needle: str
) -> None:
    path = registry(tmp_path, GOOD.replace(*edit, 1))
    with pytest.raises(LabUsageError) as caught:
        load_zoo(path)
    assert str(caught.value).startswith(f"{path}: ") and needle in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_foreign_runtime_runs_the_classic_catching_cases_of_its_backends(
    tmp_path: Path,
) -> None:
    (tmp_path / "runtime.js").write_text("")
    text = GOOD + GOOD.replace("format = 1\n", "").replace('"repair_says_safe"',
                                                            '"s"\nscript = "repair_says_safe.py"'
                                                            '\nbackend = "sqlite"', 1)
    text += '[[foreign]]\nname = "n"\ninterpreter = "node"\nscript = "runtime.js"\n'
    zoo = load_zoo(registry(tmp_path, text.replace("[[variant]]", "\n[[variant]]")))
    (runtime,) = zoo.foreign
    assert runtime.command == ("node", str((tmp_path / "runtime.js").resolve()))
    cases = foreign_cases(runtime, zoo.variants)  # the sqlite variant's case is not its to run
    assert [(case.id, backend) for case, backend in cases] == [
        ("payment.toml::tool/durable#1[sigkill]", None)
    ]
    row = foreign_row(dataclasses.replace(runtime, interpreter="no-such-interpreter-here"),
                      zoo.variants, stage="quick", workdir=tmp_path,
                      parallel=lambda calls: [call() for call in calls],
                      run_case=lambda *_: pytest.fail("nothing runs without node"))  # fmt: skip
    assert (row.status, row.correct, row.bad) == ("not-available", True, False)
    assert "no-such-interpreter-here is not on PATH" in row.note
    # Chosen variants none of whose cases it can run: nothing to judge, no false alarm.
    sqlite_only = [v for v in zoo.variants if v.backend == "sqlite"]
    row = foreign_row(runtime, sqlite_only, stage="quick", workdir=tmp_path,
                      parallel=lambda calls: [call() for call in calls],
                      run_case=lambda *_: pytest.fail("no case is this runtime's"))  # fmt: skip
    assert (row.status, row.bad, row.cases) == ("not-available", False, 0)
    assert "none of the chosen variants" in row.note


def test_duplicate_names_and_unknown_selections_are_refused(tmp_path: Path) -> None:
    with pytest.raises(LabUsageError, match="the name is used twice"):
        load_zoo(registry(tmp_path, GOOD + GOOD.replace("format = 1\n", "")))
    zoo = load_zoo(default_zoo_path())
    chosen = zoo.select("hangs, no_writer_lock,hangs")
    assert [v.name for v in chosen] == ["hangs", "no_writer_lock"]
    with pytest.raises(LabUsageError, match=r"unknown variant\(s\) nope"):
        zoo.select("nope")


def test_selftest_usage_errors_exit_2(tmp_path: Path) -> None:
    for args in (["--zoo", str(tmp_path / "none.toml")], ["--variants", "nope"]):
        result = CliRunner().invoke(main, ["selftest", "--quick", *args])
        assert result.exit_code == 2 and result.stderr.startswith("faultlab: error: ")


def result(occurrence: str, *codes: str) -> CaseResult:
    violations = tuple(Violation(code, code) for code in codes)
    return CaseResult(Case("/s/p.toml", occurrence), "fail" if codes else "pass", violations)


def test_a_variant_is_detected_only_with_every_expected_code() -> None:
    results = [result("a#1"), result("b#1", "X"), result("c#1", "Y", "X"), result("d#1", "Z")]
    row = judge_variant("v", ["Y", "Z"], results, stage="explore")
    assert (row.status, row.first_case) == ("detected", "p.toml::c#1[sigkill]")
    assert (row.cases, row.failing, row.codes) == (4, 3, {"X": 2, "Y": 1, "Z": 1})
    assert row.faults == {"sigkill": 3}
    wrong = judge_variant("v", ["Y", "W"], results, stage="explore")
    assert (wrong.status, wrong.note, wrong.bad) == ("wrong-code", "never reported: W", True)
    missed = judge_variant("v", ["Y"], [result("a#1")], stage="quick")
    assert (missed.status, missed.first_case) == ("missed", None)
    assert missed.note == "all 1 case(s) passed"
    assert judge_variant("v", ["Y"], [], stage="quick").status == "missed"


def test_the_reference_is_clean_only_when_every_case_passed() -> None:
    assert judge_reference([result("a#1")], stage="explore").status == "clean"
    # a correct runtime in another language counts as a false alarm, not a variant
    foreign = judge_reference([result("a#1", "X")], stage="quick", name="node (correct)")
    caught = judge_variant("v", ["Y"], [result("a#1", "Y")], stage="quick")
    both = SelftestResult((caught, foreign), True, 0.0, "zoo")
    assert (both.score, both.false_alarms, both.passed) == ((1, 1), 1, False)
    alarm = judge_reference([result("a#1"), result("b#1", "X")], stage="explore")
    assert (alarm.status, alarm.first_case) == ("false-alarm", "p.toml::b#1[sigkill]")
    assert alarm.bad
    assert judge_reference([], stage="explore").status == "false-alarm"  # nothing checked


def test_the_fuzz_stage_is_faultlab_fuzz() -> None:
    from faultlab.lab.campaigns.fuzz import selftest_campaign

    assert fuzz_campaign() is selftest_campaign


def test_the_full_false_alarm_stage_runs_double_sigkill_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The exploration itself is replaced (the real one is every bundled
    # scenario under every policy, minutes of processes): this checks what
    # the stage asks for and that a double-sigkill failure is a false alarm.
    from types import SimpleNamespace

    from faultlab.lab.campaigns import selftest
    from faultlab.lab.faults.double import DEFAULT_MAX_DOUBLE

    asked: list[dict[str, object]] = []
    double = CaseResult(Case("/s/p.toml", "tool/effect#1+request/durable#2", "double-sigkill"),
                        "fail", (Violation("LOST_COMMITTED", "lost"),))  # fmt: skip

    def explore_paths(paths: object, **options: object) -> object:
        asked.append(options)
        return SimpleNamespace(results=[result("a#1"), double])

    monkeypatch.setattr(selftest.api, "explore_paths", explore_paths)
    row = selftest._reference_row((), quick=False, jobs=1, workdir=tmp_path, spawn="fork",
                                  timeout=5.0)  # fmt: skip
    # In full under each scenario's own policy; sampled under each forced one.
    assert [o["policy"] for o in asked] == [None, "semantic", "turn-only", "every-event"]
    samples = [o["select"] for o in asked]
    assert samples[0] is None
    assert [(s.sample, s.seed) for s in samples[1:]] == [(selftest.SAMPLE, n) for n in (1, 2, 3)]
    for options in asked:
        assert options["faults"] == selftest.api.parse_faults("all")
        assert options["faults"][-1] == "double-sigkill"
        assert options["max_double"] == DEFAULT_MAX_DOUBLE == 24
    assert (row.status, row.first_case) == ("false-alarm", double.case.id)
    assert row.ran["double-sigkill"] == {"ran": 4, "unsupported": 0}  # one per exploration
    asked.clear()  # --exhaustive: every exploration in full
    selftest._reference_row((), quick=False, jobs=1, workdir=tmp_path, spawn="fork",
                            timeout=5.0, exhaustive=True)  # fmt: skip
    assert [o["select"] for o in asked] == [None] * 4
    acp = selftest.api.parse_faults("all", drive="acp")
    assert selftest.reference_faults("acp") == acp and acp[-1] == "double-sigkill"


def test_a_variant_fuzz_row_is_not_shrunk_unless_exhaustive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The campaign itself is replaced (a real one is minutes of processes):
    # this checks that the row asks for no shrinking when told so, and that
    # an unshrunk failing example with the expected code is a detection.
    from faultlab.lab.campaigns import selftest

    asked: list[dict[str, object]] = []
    failing = CaseResult(Case("/s/f.toml", "tool/returned#3", "sigkill"), "fail",
                         (Violation("TOOL_RESULT_LOST", "lost"),))  # fmt: skip

    def campaign(**options: object) -> list[CaseResult]:
        asked.append(options)
        return [result("a#1"), failing]

    monkeypatch.setattr(selftest, "fuzz_campaign", lambda: campaign)
    for shrink in (False, True):
        row = selftest._fuzz_row("v", ("TOOL_RESULT_LOST",), [], ["python3", "v.py"], 100, 5.0,
                                 tmp_path, 1, shrink=shrink)  # fmt: skip
        assert asked[-1]["shrink"] is shrink
        assert (row.status, row.first_case) == ("detected", failing.case.id)
