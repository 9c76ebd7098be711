# report.html built from a report's files (faultlab.lab.report.html), read
# back with the stdlib's HTML parser: every failing matrix cell links to a
# section that exists, the timeline marks the kill point with what was
# durable, repair events are highlighted, the ledger is counted against the
# fault-free run, and a page of many failures lists the rest in short.
# Files written by hand in the report layout: no process.
from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import orjson

from faultlab.lab.report.html import DETAILED, html_report, selftest_html

HEADER = {"type": "session", "format": 1, "id": "s", "createdAt": 0}


class Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[tuple[str, str]] = []  # (href, class of the cell)
        self.kills: list[dict[str, str | None]] = []
        self.rows: list[str] = []
        self._cell = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if found.get("id"):
            self.ids.add(str(found["id"]))
        if tag == "td":
            self._cell = str(found.get("class") or "")
        if tag == "a" and str(found.get("href", "")).startswith("#"):
            self.links.append((str(found["href"])[1:], self._cell))
        if tag == "li" and found.get("data-kill"):
            self.kills.append(found)
        if tag == "tr":
            self.rows.append(str(found.get("class") or ""))


def jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))


def event(seq: int, kind: str, **data: Any) -> dict[str, Any]:
    return {"seq": seq, "type": kind, "time": 0.0, "data": {"turn": 0, **data}}


def a_run(tmp_path: Path, failing: int = 1) -> Path:
    run = tmp_path / "run"
    cases = [{"id": "t.toml::turn/started#1[sigkill]", "scenario": "/s/t.toml",
              "occurrence": "turn/started#1", "fault": "sigkill", "verdict": "pass",
              "codes": [], "violations": []}]  # fmt: skip
    for n in range(1, failing + 1):
        case_id = f"t.toml::tool/effect#{n}[sigkill]"
        where = f"failures/t.toml_tool_effect_{n}_sigkill"
        cases.append({
            "id": case_id, "scenario": "/s/t.toml", "occurrence": f"tool/effect#{n}",
            "fault": "sigkill", "verdict": "fail", "codes": ["SIDE_EFFECT_DUPLICATED"],
            "violations": [{"code": "SIDE_EFFECT_DUPLICATED", "message": "applied twice",
                            "evidence": {"tool": "charge", "arguments": {"amount": 5},
                                         "count": 2, "referenceCount": 1}}],
            "artifacts": {"dir": where}, "replay": f"faultlab replay '{case_id}'",
        })  # fmt: skip
        folder = run / where
        jsonl(folder / "trace.jsonl", [
            {"boundary": "tool/durable", "n": 1, "callId": "c1"},
            {"boundary": "tool/effect", "n": 1, "tool": "charge", "parked": True},
        ])  # fmt: skip
        jsonl(folder / "crashed.jsonl", [HEADER, event(0, "turn/start")])
        jsonl(folder / "repaired.jsonl", [HEADER, event(0, "turn/start"),
                                          event(1, "turn/end", reason={"kind": "interrupted"})])
        jsonl(folder / "world-ledger.jsonl", [{"callId": "c1", "tool": "charge",
                                               "arguments": {"amount": 5}}] * 2)  # fmt: skip
    jsonl(run / "cases.jsonl", cases)
    jsonl(run / "references" / "t.toml.ledger.jsonl",
          [{"callId": "c1", "tool": "charge", "arguments": {"amount": 5}}])
    (run / "summary.json").write_bytes(orjson.dumps({"runId": "r1", "passed": False}))
    return run


def test_failing_cells_link_to_their_failure_and_the_kill_point_is_marked(
    tmp_path: Path,
) -> None:
    text = html_report(a_run(tmp_path))
    page = Page()
    page.feed(text)
    failing = [href for href, cell in page.links if cell == "v-fail"]
    assert failing == ["case-t.toml_tool_effect_1_sigkill"]
    assert set(failing) <= page.ids
    assert len(page.kills) == 1
    assert "sigkill here; durable then: 1 event(s)" in text
    assert "repair" in page.rows  # the repaired log's turn/end, added by repair
    assert "more" in page.rows  # the ledger: applied more often than without the crash
    assert "charge {&quot;amount&quot;:5} applied 2 times after resume; once without" in text
    assert "faultlab replay" in text and "http" not in text.replace("viewport", "")


def test_many_failures_stay_a_page_with_every_link_resolved(tmp_path: Path) -> None:
    text = html_report(a_run(tmp_path, failing=DETAILED + 5))
    page = Page()
    page.feed(text)
    hrefs = [href for href, _ in page.links]
    assert len(hrefs) == DETAILED + 5 and set(hrefs) <= page.ids
    assert len(page.kills) == DETAILED  # the rest are listed, not drawn


def test_a_selftest_page_puts_the_problems_first() -> None:
    rows = [{"variant": "ok_one", "stage": "quick", "status": "detected", "expected": ["SEQ_GAP"],
             "codes": {"SEQ_GAP": 1}},
            {"variant": "bad_one", "stage": "quick", "status": "missed",
             "expected": ["SIDE_EFFECT_DUPLICATED"], "codes": {}}]  # fmt: skip
    text = selftest_html({"rows": rows})
    assert text.index("bad_one") < text.index("ok_one")
    assert "1 problem row(s)" in text and "G6 safe retry" in text
