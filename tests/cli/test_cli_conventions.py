# pytest's conventions on `faultlab explore` (-x, --maxfail, -k, --lf, -q, -v,
# --color), the grouped failures a person reads at the end, and the help:
# bare `faultlab` exits 0, each command's --help ends with examples and the
# exit codes.  Real runs of the smallest failing scenario (tiny-tool.toml
# under --policy turn-only, SIGKILL only: 21 cases, a second or two each).
from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from faultlab.cli import main

ROOT = Path(__file__).resolve().parents[2]
TINY_TOOL = str(ROOT / "tests" / "scenarios" / "tiny-tool.toml")
PAYMENT = str(ROOT / "scenarios" / "payment.toml")
FAILING = ("--policy", "turn-only", "--faults", "sigkill")


def explore(reports: Path, *args: str, scenario: str = TINY_TOOL) -> tuple[int, str]:
    argv = ["explore", scenario, *FAILING, "--report-dir", str(reports), *args]
    result = CliRunner().invoke(main, argv)
    return result.exit_code, result.stderr


def explore_bare(reports: Path, *args: str) -> tuple[int, str]:
    """`explore` with no scenario argument (as --lf is used)."""
    result = CliRunner().invoke(main, ["explore", "--report-dir", str(reports), *args])
    return result.exit_code, result.stderr


def cases(reports: Path) -> list[dict[str, Any]]:
    lines = (reports / "latest" / "cases.jsonl").read_bytes().splitlines()
    return [orjson.loads(line) for line in lines]


def failed(reports: Path) -> list[str]:
    return [c["id"] for c in cases(reports) if c["verdict"] != "pass"]


@pytest.mark.realprocess
def test_the_double_charge_reads_in_words_with_its_guarantee_and_replay(tmp_path: Path) -> None:
    code, err = explore(tmp_path, "-j", "2", scenario=PAYMENT)
    assert code == 1
    summary = err[err.index("FAIL SIDE_EFFECT_DUPLICATED"):]
    assert "broke:   G6 safe retry: Guidance matches tool annotations" in summary
    assert ('harm:    charge_card {"amount":40,"currency":"EUR"} applied 2 times after resume; '
            "once without the crash") in summary  # fmt: skip
    assert "look at: world-ledger.jsonl, final.jsonl in " in summary
    groups = [line for line in err.splitlines() if line.startswith("FAIL ")]
    replays = [line for line in err.splitlines() if line.startswith("  replay:  faultlab replay")]
    assert len(groups) == len(replays) >= 3
    assert any("TOOL_INTENT_LOST" in g for g in groups)
    where = summary.split("look at: world-ledger.jsonl, final.jsonl in ")[1].split("\n")[0]
    ledger = (Path(where) / "world-ledger.jsonl").read_bytes().splitlines()
    assert len(ledger) == 2  # the file it points at shows the double charge


@pytest.mark.realprocess
def test_exitfirst_and_maxfail_stop_after_that_many_failures(tmp_path: Path) -> None:
    code, err = explore(tmp_path / "x", "-x")
    assert code == 1 and len(failed(tmp_path / "x")) == 1
    assert "stopped after 1 failing case(s)" in err
    code, err = explore(tmp_path / "m", "--maxfail", "3")
    assert code == 1 and len(failed(tmp_path / "m")) == 3
    assert len(cases(tmp_path / "m")) < 21


@pytest.mark.realprocess
def test_k_keeps_the_matching_case_ids(tmp_path: Path) -> None:
    code, _ = explore(tmp_path, "-k", "tool and not (returned or logged)")
    ids = [c["id"] for c in cases(tmp_path)]
    assert code == 1 and ids
    assert all("tool" in i and "returned" not in i and "logged" not in i for i in ids)
    code, err = explore(tmp_path, "-k", "tool and")
    assert code == 2 and "-k 'tool and'" in err


@pytest.mark.realprocess
def test_k_never_hides_a_failed_fault_free_run(tmp_path: Path) -> None:
    """-k names no coverage case here, yet a fault-free run that failed is
    said by its coverage case, not as "nothing was checked"."""
    argv = ["explore", PAYMENT, "--target", "sh -c 'exit 3'", "--faults", "torn-write",
            "-k", "flush/written#3[torn-write]", "--report-dir", str(tmp_path)]  # fmt: skip
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 1 and "REFERENCE_FAILED" in result.stderr
    assert "exited with status 3" in result.stderr
    assert [c["id"] for c in cases(tmp_path)] == ["payment.toml::coverage[reference]"]


@pytest.mark.realprocess
def test_last_failed_reruns_only_the_newest_reports_failures(tmp_path: Path) -> None:
    code, err = explore(tmp_path, "--lf", "--no-report", "-k", "nothing-matches")
    assert f"--lf: no report in {tmp_path}: running every case" in err
    explore(tmp_path, "-k", "tool/effect or turn/started")
    before = failed(tmp_path)
    assert before and len(before) < len(cases(tmp_path))
    code, err = explore_bare(tmp_path, "--lf", *FAILING)  # the scenarios come from the report
    assert code == 1 and f"--lf: rerunning {len(before)} failing case(s)" in err
    assert [c["id"] for c in cases(tmp_path)] == before


@pytest.mark.realprocess
def test_quiet_and_verbose(tmp_path: Path) -> None:
    _, quiet = explore(tmp_path, "-q", "-k", "effect")
    assert "[" not in quiet.split("\n")[0] and "broke:" not in quiet
    assert "exploring" not in quiet and "case(s) in" in quiet
    assert all(line.startswith(("FAIL ", "  replay:", "report:")) or "case(s) in" in line
               for line in quiet.splitlines())  # fmt: skip
    _, verbose = explore(tmp_path, "-v", "-k", "effect or turn/started")
    assert "PASS  tiny-tool.toml::turn/started#1[sigkill]" in verbose
    assert "FAIL  tiny-tool.toml::tool/effect#1[sigkill]" in verbose


@pytest.mark.realprocess
def test_color_always_paints_never_does_not(tmp_path: Path) -> None:
    _, painted = explore(tmp_path, "--color", "always", "-q", "-k", "effect#1")
    assert "\x1b[1;31mFAIL\x1b[0m" in painted
    _, plain = explore(tmp_path, "--color", "never", "-q", "-k", "effect#1")
    assert "\x1b[" not in plain


def test_bare_faultlab_prints_its_help_and_exits_0() -> None:
    result = CliRunner().invoke(main, [])
    assert result.exit_code == 0
    assert "Usage:" in result.stdout and "explore" in result.stdout
    assert result.stdout.rstrip().endswith("130 interrupted.")


@pytest.mark.parametrize(
    "command",
    [["explore"], ["run"], ["boundaries"], ["replay"], ["inspect"], ["fuzz"], ["selftest"],
     ["bench"]],
)  # fmt: skip
def test_each_help_ends_with_examples_and_exit_codes(command: list[str]) -> None:
    result = CliRunner().invoke(main, [*command, "--help"])
    assert result.exit_code == 0
    tail = result.stdout[result.stdout.index("Options:"):]
    examples = tail[tail.index("Examples:"):]
    assert examples.count(f"faultlab {command[0]}") >= 2
    assert "Exit status: 0" in examples and examples.rstrip().endswith("interrupted.")


def test_a_slow_start_is_said_once(capsys: pytest.CaptureFixture[str]) -> None:
    import time

    from faultlab.cli.show import Progress

    progress = Progress(slow=0.05)
    try:
        time.sleep(0.5)
    finally:
        progress.close()
    assert capsys.readouterr().err.count("still waiting for the fault-free reference run(s)") == 1
