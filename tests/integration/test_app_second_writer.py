# A second process resuming a LangGraph thread while the first is alive
# (fault `second-writer`), and `explore --app`'s report: the example app
# charges twice and forks its checkpoint chain; the report keeps each
# failure's databases and readings, and `faultlab replay` re-runs an app case
# from it with the same verdict.
from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

pytest.importorskip("langgraph.checkpoint.sqlite")

from faultlab.cli import main
from faultlab.lab import run_app_single

pytestmark = pytest.mark.realprocess

REPO = Path(__file__).resolve().parents[2]
PAYMENT = str(REPO / "scenarios" / "payment.toml")
PLAIN = "langgraph:examples.langgraph_refund:build_graph"


@pytest.fixture(autouse=True)
def _repo_cwd(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)  # the child imports the app from the working directory


def test_a_second_writer_charges_again_and_forks_the_chain(tmp_path: Path) -> None:
    result = run_app_single(PAYMENT, "tool/effect#1", app=PLAIN,
                            fault="second-writer/resume/sync", workdir=tmp_path)  # fmt: skip
    assert result.codes == ("UNKNOWN_OUTCOME_RERUN", "SIDE_EFFECT_DUPLICATED", "SEQ_FORK")
    final = orjson.loads((Path(result.artifacts["dir"]) / "final.thread.json").read_bytes())
    assert len(final["forks"]) == 1  # the framework's own reading shows the fork
    ledger = (Path(result.artifacts["dir"]) / "world.jsonl").read_bytes().splitlines()
    assert len(ledger) == 2  # and the world has two charges


def test_the_app_report_keeps_the_evidence_and_replays(tmp_path: Path) -> None:
    runner = CliRunner()
    explored = runner.invoke(main, [
        "explore", "--app", PLAIN, "--faults", "second-writer", "--compare", "durability=sync",
        "--report-dir", str(tmp_path), "--json", PAYMENT])  # fmt: skip
    assert explored.exit_code == 1, explored.output
    summary = orjson.loads(explored.stdout)
    report = Path(summary["report"])
    cases = [orjson.loads(line) for line in (report / "cases.jsonl").read_bytes().splitlines()]
    failed = [c for c in cases if c["verdict"] == "fail"]
    assert {c["occurrence"] for c in failed} == {
        "model/request#1", "tool/started#1", "tool/effect#1", "model/request#2"}
    case = next(c for c in failed if c["occurrence"] == "tool/effect#1")
    evidence = report / case["artifacts"]["dir"]
    for name in ("at-kill.sqlite", "final.sqlite", "final.thread.json", "records.jsonl",
                 "world.jsonl", "repro.py"):  # fmt: skip
        assert (evidence / name).is_file(), name
    replayed = runner.invoke(main, ["replay", case["id"], "--report-dir", str(report)])
    assert replayed.exit_code == 1
    assert "same verdict" in replayed.output and "SEQ_FORK" in replayed.output
