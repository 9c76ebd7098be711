# The reload benchmark's generated logs (faultlab/bench/synthlog.py): both shapes are
# valid session logs that read back without a problem, leave crash repair the
# same work, and differ in the size of their events; a bad shape is refused.
from __future__ import annotations

from pathlib import Path

import pytest

from faultlab.bench.synthlog import SHAPES, TOOLS_TOML, write_synthetic_log
from faultlab.lab.oracle.expected import expected_repair
from faultlab.lab.read.jsonl import read_log_file
from faultlab.scenario import parse_scenario

TOOLS = {
    spec.name: spec
    for spec in parse_scenario(
        'name = "t"\n' + TOOLS_TOML + '[[turns]]\nuser = "u"\n[[turns.steps]]\ntext = "t"\n'
    ).tools
}


@pytest.mark.parametrize("shape", SHAPES)
def test_a_generated_log_reads_back_cleanly_with_work_for_repair(
    tmp_path: Path, shape: str
) -> None:
    log = write_synthetic_log(tmp_path / "s.jsonl", 300_000, shape=shape)
    assert log.size == log.path.stat().st_size >= 300_000
    view = read_log_file(log.path)
    assert view.problems == () and view.torn_bytes == 0 and len(view.events) == log.events
    assert view.last_turn_open
    repair = expected_repair(view.events, TOOLS)
    assert [(r.name, r.code) for r in repair.results] == [
        ("charge_card", "TOOL_OUTCOME_UNKNOWN"),
        ("send_email", "TOOL_NOT_STARTED"),
    ]


def test_the_documents_shape_has_larger_events_with_text_to_escape(tmp_path: Path) -> None:
    chunks = write_synthetic_log(tmp_path / "c.jsonl", 300_000)
    documents = write_synthetic_log(tmp_path / "d.jsonl", 300_000, shape="documents")
    assert documents.size / documents.events > 3 * (chunks.size / chunks.events)
    results = [e for e in read_log_file(documents.path).events if e.type == "tool/result"]
    assert any("\n" in e.data["content"] and '"' in e.data["content"] for e in results)


def test_an_unknown_shape_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="shape: unknown log shape 'tokens'"):
        write_synthetic_log(tmp_path / "s.jsonl", 1000, shape="tokens")
    assert not (tmp_path / "s.jsonl").exists()
