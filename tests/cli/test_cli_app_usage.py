# `explore --app` and `--compare`: bad input exits 2 with a one-line error,
# before any child starts.
from __future__ import annotations

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
