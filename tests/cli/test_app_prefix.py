# The wrong framework prefix end to end (issue 32 item 6): `explore --app
# pydantic-ai:` given the LangGraph example exits 2 before any case with one
# line naming the right prefix (the detection itself, every pair:
# tests/unit/lab/apps/test_appspec.py).
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.realprocess
def test_a_pydantic_ai_spec_of_a_langgraph_module_exits_2_with_one_line(
    faultlab_cli: Callable[..., Any],
) -> None:  # fmt: skip
    pytest.importorskip("pydantic_ai")
    done = faultlab_cli("explore", str(REPO / "scenarios" / "payment.toml"), "--app",
                        "pydantic-ai:examples.langgraph_refund:build_graph", "--no-report",
                        cwd=REPO, timeout=180)  # fmt: skip
    assert done.code == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("faultlab")]
    assert len(lines) == 1, done.stderr
    assert lines[0].endswith("examples.langgraph_refund: this module defines a LangGraph graph; "
                             "use langgraph:MODULE:FACTORY"), lines  # fmt: skip
