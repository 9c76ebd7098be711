# `explore --app` and `--compare`: bad input exits 2 with a one-line error,
# before any child starts; the engine's options (-k) apply to apps too.
from __future__ import annotations

from pathlib import Path

import orjson
from click.testing import CliRunner

from faultlab.cli import main
from tests.conftest import SCENARIOS

PAYMENT = str(SCENARIOS / "payment.toml")


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["explore", *args, PAYMENT])
    return result.exit_code, result.output


def test_a_bad_app_spec_is_a_usage_error() -> None:
    code, output = _run("--app", "crewai:m:f")
    assert code == 2 and "langgraph:MODULE:FACTORY" in output


def test_compare_needs_an_app_and_a_known_mode() -> None:
    assert _run("--compare", "durability=sync")[0] == 2
    code, output = _run("--app", "langgraph:m:f", "--compare", "durability=fast")
    assert code == 2 and "fast" in output


def test_app_is_not_combined_with_agent() -> None:
    code, output = _run("--app", "langgraph:m:f", "--agent", "reference")
    assert code == 2 and "--agent" in output


def test_a_pydantic_ai_app_compares_save_policies_not_durability() -> None:
    code, output = _run("--app", "pydantic-ai:m:f", "--compare", "durability=sync")
    assert code == 2 and "save=MODE" in output


def test_selection_options_apply_to_an_app_as_to_every_drive() -> None:
    """-k is the engine's, so it selects an app's cases too (it was refused
    before the app drive joined the one pipeline)."""
    result = CliRunner().invoke(main, [
        "explore", "--app", "langgraph:examples.langgraph_refund:build_graph", "--faults",
        "sigkill", "-k", "tool/effect and resume", "--no-report", "--json", PAYMENT,
    ])  # fmt: skip
    ids = [case["id"] for case in orjson.loads(result.stdout)["cases"]]
    assert ids == ["payment.toml::tool/effect#1[sigkill/resume/async]"], result.output
    assert result.exit_code == 1  # LangGraph's async mode reruns the charge there


def test_an_unwritable_report_dir_is_refused_before_any_case(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    code, output = _run("--app", "langgraph:m:f", "--report-dir", str(blocked))
    assert code == 2 and "--report-dir" in output
