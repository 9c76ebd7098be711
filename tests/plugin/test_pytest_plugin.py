"""The pytest plugin, run in fresh pytest processes by `pytester`: opt-in
collection with readable ids, passing and failing runs (the evidence and the
replay command in the output), `-n 2`, `--junitxml`, ini settings, shards,
the `crashlab` fixture, usage errors, and a cheap import."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytest_plugins = ("pytester",)
pytestmark = pytest.mark.realprocess

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
SIGKILL = ("--faultlab", "--faultlab-faults", "sigkill", "-p", "no:cacheprovider")


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    folder = pytester.mkdir("scenarios")
    for name in ("tiny.toml", "tiny-tool.toml"):
        (folder / name).write_text((SCENARIOS / name).read_text("utf-8"), "utf-8")
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    return pytester


def ids(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if "::" in line]


def test_scenarios_are_collected_only_when_asked(project: pytest.Pytester) -> None:
    plain = project.runpytest("--collect-only", "-q", "-p", "no:cacheprovider")
    assert ids(plain) == ["test_plain.py::test_plain"]
    asked = project.runpytest("--collect-only", "-q", *SIGKILL)
    collected = ids(asked)
    assert "scenarios/tiny.toml::coverage" in collected
    assert "scenarios/tiny-tool.toml::tool/durable#1[sigkill]" in collected
    assert "scenarios/tiny-tool.toml::tool/effect#1[sigkill]" in collected
    assert all(i.endswith(("[sigkill]", "::coverage", "::test_plain")) for i in collected)


def test_a_passing_run_under_xdist_with_junit(project: pytest.Pytester) -> None:
    junit = project.path / "junit.xml"
    result = project.runpytest_subprocess(
        "scenarios/tiny.toml", *SIGKILL, "-n", "2", f"--junitxml={junit}"
    )
    outcomes = result.parseoutcomes()
    assert result.ret == 0 and outcomes["passed"] >= 10 and "failed" not in outcomes
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "0"
    assert int(suite.get("tests", "0")) == outcomes["passed"]
    names = {case.get("name") for case in suite.iter("testcase")}
    assert {"coverage", "request/durable#1[sigkill]"} <= names


def test_a_failing_run_shows_the_evidence_and_the_replay_command(
    project: pytest.Pytester,
) -> None:
    junit = project.path / "junit.xml"
    result = project.runpytest_subprocess(
        "scenarios/tiny-tool.toml", *SIGKILL, "--faultlab-policy", "turn-only",
        "-k", "tool/effect", "-n", "2", f"--junitxml={junit}",
    )  # fmt: skip
    assert result.ret == 1
    result.stdout.fnmatch_lines([
        "*tiny-tool.toml::tool/effect#1[[]sigkill[]]: FAIL (*TOOL_INTENT_LOST*)",
        "*TOOL_INTENT_LOST [[]G2[]]: a tool body started but its tool/call was not durable",
        "*the body of call-t0-s0-0 started but its tool/call was not in the crashed log",
        '*evidence: {"callId":"call-t0-s0-0"}',
        "*artifacts: *crashed.jsonl*",
        "*replay: faultlab run */scenarios/tiny-tool.toml --at 'tool/effect#1' --fault sigkill"
        " --policy turn-only",
    ])  # fmt: skip
    failure = ET.parse(junit).getroot().find(".//failure")
    assert failure is not None and "TOOL_INTENT_LOST" in (failure.text or "")


def test_ini_settings_enable_and_configure_collection(project: pytest.Pytester) -> None:
    project.makeini(
        "[pytest]\nfaultlab = true\nfaultlab_faults = io-error\n"
        "faultlab_patterns =\n    scenarios/tiny-tool.toml\n"
    )
    result = project.runpytest("--collect-only", "-q", "-p", "no:cacheprovider")
    collected = [i for i in ids(result) if i.startswith("scenarios/")]
    assert collected and all(i.startswith("scenarios/tiny-tool.toml::") for i in collected)
    assert all(i.endswith(("[io-error]", "::coverage")) for i in collected)


def test_write_and_fsync_failures_are_items_of_their_own(project: pytest.Pytester) -> None:
    result = project.runpytest(
        "scenarios/tiny-tool.toml", "--collect-only", "-q", "-p", "no:cacheprovider",
        "--faultlab", "--faultlab-faults", "all",
    )  # fmt: skip
    collected = ids(result)
    for fault in ("io-error", "io-error-enospc", "fsync-error", "fsync-enospc"):
        assert f"scenarios/tiny-tool.toml::tool/logged#1[{fault}]" in collected, collected


def test_shards_partition_the_cases(project: pytest.Pytester) -> None:
    def collected(*extra: str) -> list[str]:
        result = project.runpytest("scenarios/tiny.toml", "--collect-only", "-q", *SIGKILL, *extra)
        return [i for i in ids(result) if i.startswith("scenarios/")]

    whole = collected()
    parts = [collected("--faultlab-shard", f"{k}/3") for k in (1, 2, 3)]
    assert sorted(i for part in parts for i in part) == sorted(whole) and all(parts)
    assert not set(parts[0]) & set(parts[1])


def test_the_crashlab_fixture_runs_cases(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_lab="""
        from faultlab.scenario import load_scenario

        def test_recovers(crashlab):
            assert "tool/effect#1" in crashlab.boundaries("scenarios/tiny-tool.toml")
            result = crashlab.check("scenarios/tiny-tool.toml", "tool/effect#1")
            assert result.passed and result.verdict == "pass"

        def test_turn_only_breaks(crashlab):
            scenario = load_scenario("scenarios/tiny-tool.toml")
            result = crashlab.run(scenario, "tool/effect#1", policy="turn-only")
            assert "TOOL_INTENT_LOST" in result.codes

        def test_check_fails_readably(crashlab):
            crashlab.check("scenarios/tiny-tool.toml", "tool/effect#1", policy="turn-only")
    """
    )
    result = project.runpytest_subprocess("test_lab.py", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*TOOL_INTENT_LOST [[]G2[]]*", "*replay: faultlab run *"])


def test_bad_options_are_usage_errors(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess("--faultlab", "--faultlab-policy", "fast")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*faultlab: unknown policy 'fast' (policies: semantic*"])
    result = project.runpytest_subprocess("--faultlab", "--faultlab-shard", "4/3")
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_a_broken_scenario_is_a_one_line_collection_error(project: pytest.Pytester) -> None:
    (project.path / "scenarios" / "bad.toml").write_text('name = "bad"\n[[turns]]\nuser = 1\n')
    result = project.runpytest_subprocess("scenarios/bad.toml", *SIGKILL)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*bad.toml:3: turns[[]0[]].user: expected string, got integer 1*"])
    assert "Traceback" not in result.stdout.str()


def test_the_plugin_is_cheap_to_import() -> None:
    code = (
        "import sys, faultlab.pytest_plugin; "
        "print(sorted(m for m in sys.modules if m.startswith(('faultlab.lab', 'hypothesis'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


AGENT = ("--faultlab", "--faultlab-agent", "reference", "--faultlab-faults", "sigkill",
         "--faultlab-delays", "0", "-p", "no:cacheprovider")  # fmt: skip


def test_a_black_box_agent_is_collected_and_run(project: pytest.Pytester) -> None:
    # The reference HTTP agent against faultlab's servers: kill points are
    # the servers' boundaries at the delays given; the tool body kill passes.
    collected = ids(project.runpytest("--collect-only", "-q", "scenarios/tiny-tool.toml", *AGENT))
    assert "scenarios/tiny-tool.toml::tool/applied#1@0ms[sigkill]" in collected
    assert "scenarios/tiny-tool.toml::model/request#1@0ms[sigkill]" in collected
    ran = project.runpytest_subprocess("scenarios/tiny-tool.toml", *AGENT, "-k", "tool/applied")
    assert ran.ret == 0 and ran.parseoutcomes()["passed"] == 1, ran.outlines[-5:]


def test_an_unknown_agent_is_a_usage_error(project: pytest.Pytester) -> None:
    result = project.runpytest("--faultlab", "--faultlab-agent", "no-such-agent")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert any("faultlab: " in line and "no-such-agent" in line for line in result.errlines)
