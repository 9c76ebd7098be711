# LangGraph apps of the shapes people write (issue 32), each through real
# children (the app drive) and judged against the world ledger: a subgraph
# agent, the prebuilt agent (one task per call, two parallel calls), a
# hand-written tool node, tools taking ToolRuntime, the app's own messages
# key; each with a case that must pass and one that must fail with the
# right codes, the recipe passing and its broken twin caught.  Also:
# parallel calls get the same kill-point names in every run, and a run
# that never ran the scenario's tools is NOTHING_TESTED.
from __future__ import annotations

import importlib.util
import re
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from faultlab.lab import run_app_single
from faultlab.lab.apps.drive import AppOptions, run_app_reference
from faultlab.scenario import load_scenario

CLI = Callable[..., Any]

pytestmark = [
    pytest.mark.realprocess,
    pytest.mark.skipif(importlib.util.find_spec("langgraph") is None,
                       reason="langgraph is not installed"),
]

REPO = Path(__file__).resolve().parents[2]
FIX = REPO / "tests" / "fixtures" / "lgapps"
TWO_CALLS = str(FIX / "lookup_charge.toml")  # a read-only lookup beside a charge
PAYMENT = str(REPO / "scenarios" / "payment.toml")
KEYED = str(FIX / "keyed_charge.toml")
APPS = "langgraph:tests.fixtures.lgapps"
RERUN = {"UNKNOWN_OUTCOME_RERUN", "SIDE_EFFECT_DUPLICATED"}

# (app, scenario, occurrence, fault, verdict, codes, exact)
CASES = [
    pytest.param(f"{APPS}.subgraph:build_graph", TWO_CALLS, "tool/effect#1",
                 "sigkill/resume/sync", "fail", RERUN, True, id="subgraph-resume-reruns"),
    pytest.param(f"{APPS}.subgraph_repaired:build_graph", TWO_CALLS, "tool/effect#1",
                 "sigkill/hook/sync", "pass", set(), True, id="subgraph-recipe-passes"),
    # (In `async` a kill in a tool body can come before the call is durable
    # at all, a race with the background writer: TOOL_INTENT_LOST there is
    # real, so the recipe's cases are in `sync`.)
    pytest.param(f"{APPS}.subgraph_repaired:build_graph", TWO_CALLS, "tool/returned#2",
                 "sigkill/hook/sync", "pass", set(), True, id="subgraph-recipe-second-call"),
    pytest.param(f"{APPS}.subgraph_broken:build_graph", TWO_CALLS, "tool/effect#1",
                 "sigkill/hook/sync", "fail", {"UNKNOWN_OUTCOME_RERUN"}, False,
                 id="subgraph-broken-recipe-is-caught"),
    pytest.param(f"{APPS}.prebuilt:build_graph", TWO_CALLS, "tool/effect#1",
                 "sigkill/resume/sync", "fail", RERUN, True, id="prebuilt-resume-reruns"),
    pytest.param(f"{APPS}.prebuilt_repaired:build_graph", TWO_CALLS, "tool/effect#1",
                 "sigkill/hook/sync", "pass", set(), True, id="prebuilt-recipe-passes"),
    pytest.param(f"{APPS}.prebuilt_repaired:build_graph", TWO_CALLS, "tool/started#2",
                 "sigkill/hook/sync", "pass", set(), True, id="prebuilt-recipe-one-call-done"),
    pytest.param(f"{APPS}.prebuilt_broken:build_graph", TWO_CALLS, "tool/effect#1",
                 "sigkill/hook/sync", "fail", RERUN, False, id="prebuilt-broken-recipe-is-caught"),
    pytest.param(f"{APPS}.handwritten:build_graph", TWO_CALLS, "tool/effect#1",
                 "sigkill/resume/sync", "fail", RERUN, True, id="handwritten-resume-reruns"),
    pytest.param(f"{APPS}.handwritten:build_graph", TWO_CALLS, "model/request#2",
                 "sigkill/resume/sync", "pass", set(), True, id="handwritten-after-results"),
    pytest.param(f"{APPS}.handwritten:build_args_only", TWO_CALLS, "tool/effect#1",
                 "sigkill/resume/sync", "fail", RERUN, True, id="args-only-resume-reruns"),
    pytest.param(f"{APPS}.handwritten:build_args_only", TWO_CALLS, "model/request#2",
                 "sigkill/resume/sync", "pass", set(), True, id="args-only-after-results"),
    pytest.param(f"{APPS}.ownkey:build_graph", PAYMENT, "tool/effect#1",
                 "sigkill/resume/sync", "fail", RERUN, True, id="own-key-resume-reruns"),
    pytest.param(f"{APPS}.ownkey:build_graph", PAYMENT, "tool/effect#1",
                 "sigkill/hook/sync", "pass", set(), True, id="own-key-recipe-passes"),
    # `sync`, killed as the checkpoint that schedules the tools is written:
    # the call is durable as a pending write and never started; the hook,
    # told the durability, leaves it to invoke(None), which runs it once.
    pytest.param("langgraph:examples.langgraph_refund.repaired:build_graph", PAYMENT,
                 "checkpoint/put#3", "sigkill/hook/sync", "pass", set(), True,
                 id="never-started-then-ran-once-is-right"),
    # Tools that take ToolRuntime (langgraph's injected runtime) under ToolNode.
    pytest.param(f"{APPS}.toolruntime:build_graph", PAYMENT, "tool/effect#1",
                 "sigkill/resume/sync", "fail", RERUN, True, id="toolruntime-resume-reruns"),
    pytest.param(f"{APPS}.toolruntime:build_graph", PAYMENT, "model/request#2",
                 "sigkill/resume/sync", "pass", set(), True, id="toolruntime-after-results"),
    # The charge takes the call id as its key: the re-run applied nothing more.
    pytest.param("langgraph:examples.langgraph_refund:build_graph", KEYED, "tool/effect#1",
                 "sigkill/resume/sync", "pass", set(), True, id="keyed-rerun-is-absorbed"),
]  # fmt: skip


@pytest.fixture(autouse=True)
def _repo_cwd(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)  # the child imports the apps from the working directory


@pytest.mark.parametrize(("app", "scenario", "occurrence", "fault", "verdict", "codes", "exact"),
                         CASES)  # fmt: skip
def test_a_shape_gets_its_codes(app: str, scenario: str, occurrence: str, fault: str,
                                verdict: str, codes: set[str], exact: bool,
                                tmp_path: Path) -> None:  # fmt: skip
    result = run_app_single(scenario, occurrence, app=app, fault=fault, workdir=tmp_path)
    found = set(result.codes)
    assert result.verdict == verdict, result.violations
    assert found == codes if exact else codes <= found, result.violations


@pytest.mark.parametrize("app", ["prebuilt:build_graph", "handwritten:build_args_only"])
def test_parallel_calls_have_the_same_kill_point_names_in_every_run(app: str,
                                                                     tmp_path: Path) -> None:
    scenario = load_scenario(TWO_CALLS)
    orders = []
    for run in range(3):
        options = AppOptions(f"{APPS}.{app}", tmp_path / str(run), durability="sync")
        reference = run_app_reference(TWO_CALLS, scenario, options)
        assert reference.returncode == 0, reference.stderr
        orders.append([(r["boundary"], r["n"], r["callId"]) for r in reference.trace
                       if str(r.get("boundary", "")).startswith("tool/")])  # fmt: skip
    assert orders[0][0] == ("tool/started", 1, "call_0_0_0")  # call order in the AI message
    assert orders[0] == orders[1] == orders[2]


@pytest.mark.parametrize(("factory", "missing"), [
    ("build_dropping_calls", "ran no tool"),
    ("build_first_call_only", "ran lookup_order but not charge_card"),
])  # fmt: skip
def test_an_app_that_does_not_run_the_calls_is_nothing_tested(
    factory: str, missing: str, faultlab_cli: CLI,
) -> None:
    done = faultlab_cli("explore", TWO_CALLS, "--app", f"{APPS}.handwritten:{factory}",
                        "--faults", "sigkill", "-k", "coverage", "--no-report",
                        cwd=REPO, timeout=180)  # fmt: skip
    assert done.code == 1, done.stderr
    assert "NOTHING_TESTED" in done.stderr and missing in done.stderr, done.stderr
    good = faultlab_cli("explore", TWO_CALLS, "--app", f"{APPS}.handwritten:build_graph",
                        "--faults", "sigkill", "-k", "coverage", "--no-report",
                        cwd=REPO, timeout=180)  # fmt: skip
    assert "NOTHING_TESTED" not in good.stderr, good.stderr
    assert re.search(r"1 case\(s\) in .*1 pass", good.stderr), good.stderr


def _named(stderr: str) -> list[tuple[list[str], Path]]:
    """Each `look at: A, B in FOLDER/` line of the console: (names, folder)."""
    found = re.findall(r"look at: (.+) in (\S+)/\n", stderr)
    return [(names.split(", "), Path(folder)) for names, folder in found]


def test_an_app_that_raises_shows_its_traceback_and_names_only_files_it_kept(
    faultlab_cli: CLI, tmp_path: Path,
) -> None:
    reports = tmp_path / "reports"
    done = faultlab_cli("explore", PAYMENT, "--app", f"{APPS}.raising:build_graph",
                        "--faults", "sigkill", "--report-dir", str(reports),
                        cwd=REPO, timeout=180)  # fmt: skip
    assert done.code == 1, done.stderr
    assert "the app raised RuntimeError: the refund service is down" in done.stderr
    assert 'raise RuntimeError("the refund service is down")' in done.stderr  # the traceback
    report = next(reports.glob("2*/report.md")).read_text()
    assert "Traceback (most recent call last)" in report
    named = _named(done.stderr)
    assert named, done.stderr
    for names, folder in named:
        assert all((folder / name).is_file() for name in names), (names, sorted(folder.iterdir()))
    # The replay command it printed works.
    replay = re.search(r"replay:  (faultlab replay .+)\n", done.stderr)
    assert replay is not None, done.stderr
    again = faultlab_cli(*shlex.split(replay.group(1))[1:], cwd=REPO, timeout=180)
    assert "REFERENCE_FAILED" in again.stderr and "Traceback" not in again.stderr, again.stderr


def test_a_failing_app_case_names_files_it_kept_and_its_replay_works(
    faultlab_cli: CLI, tmp_path: Path,
) -> None:
    reports = tmp_path / "reports"
    done = faultlab_cli("explore", TWO_CALLS, "--app", f"{APPS}.prebuilt:build_graph",
                        "--compare", "durability=sync", "--faults", "sigkill",
                        "-k", "tool/effect and resume", "--report-dir", str(reports),
                        cwd=REPO, timeout=300)  # fmt: skip
    assert done.code == 1, done.stderr
    named = _named(done.stderr)
    assert named, done.stderr
    for names, folder in named:
        assert all((folder / name).is_file() for name in names), (names, sorted(folder.iterdir()))
    for command in dict.fromkeys(re.findall(r"replay:  (faultlab .+)\n", done.stderr)):
        again = faultlab_cli(*shlex.split(command)[1:], cwd=REPO, timeout=300)
        assert again.code == 1 and "same verdict" in again.stderr, (command, again.stderr)


@pytest.mark.parametrize(("spec", "says"), [
    (f"{APPS}.nosuch:build_graph", "no module named tests.fixtures.lgapps.nosuch"),
    (f"{APPS}.badspecs:nosuch", "defines no factory nosuch"),
    (f"{APPS}.badspecs:raising", "raised KeyError: 'REFUND_API_URL'"),
    (f"{APPS}.badspecs:not_a_graph", "not a compiled LangGraph graph"),
    (f"{APPS}.badspecs:uncompiled", "return builder.compile(checkpointer=checkpointer)"),
    (f"{APPS}.badspecs:no_checkpointer", "without the checkpointer it was passed"),
    ("langgraph:examples.pydantic_ai_refund:build_agent",
     "defines a pydantic-ai app; use pydantic-ai:"),
])  # fmt: skip
def test_a_bad_app_spec_exits_2_with_one_line(spec: str, says: str, faultlab_cli: CLI) -> None:
    done = faultlab_cli("explore", PAYMENT, "--app", spec, "--no-report", cwd=REPO, timeout=180)
    assert done.code == 2, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    # One error line (beside the run's header and progress notes).
    lines = [line for line in done.stderr.splitlines() if line.startswith("faultlab")]
    assert len(lines) == 1 and says in lines[0], done.stderr
    assert done.left == (), done.left
