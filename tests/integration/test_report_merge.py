"""Sharding across machines: the union of --shard 1/3, 2/3, 3/3 is the
unsharded run (explore and fuzz), and `faultlab report merge` of the three
shard reports gives the unsharded summary, case order, JUnit and matrix."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from faultlab.cli import main

HERE = Path(__file__).resolve().parents[1]
TINY_TOOL = str(HERE / "scenarios" / "tiny-tool.toml")
pytestmark = pytest.mark.realprocess
SAME = ("cases", "counts", "passed", "codes")


def invoke(*args: str, code: int | None = None) -> tuple[int, Any, str]:
    result = CliRunner().invoke(main, [*args, "--json"])
    if code is not None:
        assert result.exit_code == code, result.stderr
    data = orjson.loads(result.stdout) if result.stdout.strip() else None
    return result.exit_code, data, result.stderr


def records(run: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in (run / "cases.jsonl").read_bytes().splitlines()]


def summary(run: Path) -> dict[str, Any]:
    return dict(orjson.loads((run / "summary.json").read_bytes()))


@pytest.fixture(scope="module")
def explored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path], Path]:
    base = tmp_path_factory.mktemp("explore")
    common = ("explore", TINY_TOOL, "--policy", "turn-only", "--faults", "sigkill,io-error",
              "--jobs", "2")  # fmt: skip
    invoke(*common, "--report-dir", str(base / "whole"), code=1)
    shards = []
    for k in (1, 2, 3):
        invoke(*common, "--shard", f"{k}/3", "--report-dir", str(base / f"s{k}"))
        shards.append((base / f"s{k}" / "latest").resolve())
    _code, merged, stderr = invoke("report", "merge", *map(str, reversed(shards)),
                                   "--report-dir", str(base / "merged"), code=1)  # fmt: skip
    assert "merged 3 report(s)" in stderr
    return (base / "whole" / "latest").resolve(), shards, Path(merged["report"])


def test_explore_shards_union_is_the_unsharded_run(explored: tuple[Path, list[Path], Path]) -> None:
    whole, shards, _merged = explored
    ids = [r["id"] for r in records(whole)]
    parts = [[r["id"] for r in records(s)] for s in shards]
    assert sorted(i for part in parts for i in part) == sorted(ids)
    assert all(parts) and len(set(ids)) == len(ids)


def test_merge_gives_the_unsharded_summary_order_junit_and_matrix(
    explored: tuple[Path, list[Path], Path],
) -> None:
    whole, _shards, merged = explored
    assert {k: summary(merged)[k] for k in SAME} == {k: summary(whole)[k] for k in SAME}
    assert summary(merged)["scenarios"] == summary(whole)["scenarios"]
    assert [m["shard"] for m in summary(merged)["merged"]] == ["1/3", "2/3", "3/3"]
    assert [r["id"] for r in records(merged)] == [r["id"] for r in records(whole)]
    assert [r["verdict"] for r in records(merged)] == [r["verdict"] for r in records(whole)]

    def junit(run: Path) -> tuple[str | None, ...]:
        suite = ET.parse(run / "junit.xml").getroot().find("testsuite")
        assert suite is not None
        return suite.get("tests"), suite.get("failures"), suite.get("errors")

    assert junit(merged) == junit(whole)
    matrix = [line for line in (merged / "report.md").read_text().splitlines() if "|" in line]
    assert matrix == [line for line in (whole / "report.md").read_text().splitlines()
                      if "|" in line]  # fmt: skip
    failing = [r for r in records(merged) if r["verdict"] != "pass"]
    assert failing and all((merged / r["artifacts"]["dir"] / "repro.py").is_file() for r in failing)


def test_a_case_replays_from_the_merged_report(explored: tuple[Path, list[Path], Path]) -> None:
    _whole, _shards, merged = explored
    failing = next(r for r in records(merged) if r["verdict"] == "fail")
    _code, replayed, _ = invoke("replay", failing["id"], "--report-dir", str(merged), code=1)
    assert replayed["sameAsRecorded"]


def test_merge_refuses_an_incomplete_or_inconsistent_set(
    explored: tuple[Path, list[Path], Path], tmp_path: Path
) -> None:
    whole, shards, _merged = explored
    _c, _d, stderr = invoke("report", "merge", str(shards[0]), str(shards[2]), code=2)
    assert "shard(s) 2/3 missing" in stderr
    _c, _d, stderr = invoke("report", "merge", str(shards[0]), str(shards[0]), code=2)
    assert "shard 1/3 is given twice" in stderr
    _c, _d, stderr = invoke("report", "merge", str(shards[0]), str(whole), code=2)
    assert "sharded and unsharded" in stderr
    _c, _d, stderr = invoke("report", "merge", str(tmp_path), code=2)
    assert "not a faultlab report (summary.json is missing)" in stderr
    _c, partial, _ = invoke("report", "merge", str(shards[0]), str(shards[2]), "--allow-partial",
                            "--report-dir", str(tmp_path / "m"))  # fmt: skip
    assert partial["cases"] == len(records(shards[0])) + len(records(shards[2]))


def test_fuzz_shards_union_is_the_unsharded_campaign_and_merges(tmp_path: Path) -> None:
    common = ("fuzz", "--examples", "9", "--stream-size", "3", "--seed", "21")
    _c, whole, _ = invoke(*common, "--report-dir", str(tmp_path / "whole"), code=0)
    shards = []
    for k in (1, 2, 3):
        _c, part, _ = invoke(*common, "--shard", f"{k}/3", "--report-dir", str(tmp_path / f"{k}"))
        assert part["streams"] == [k - 1]
        shards.append(part["report"])

    def examples(run: str) -> list[tuple[int, int, str]]:
        return [(r["stream"], r["example"], r["id"]) for r in records(Path(run))]

    union = sorted(e for s in shards for e in examples(s))
    assert union == sorted(examples(whole["report"])) and len(union) == 9
    _c, merged, _ = invoke("report", "merge", *shards, "--report-dir", str(tmp_path / "m"), code=0)
    assert {k: merged[k] for k in SAME} == {k: whole[k] for k in SAME}
    assert merged["kind"] == "fuzz" and merged["streams"] == [0, 1, 2]
    assert examples(merged["report"]) == examples(whole["report"])
