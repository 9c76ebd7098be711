# User mistakes at the command line: exit 2 and one line naming the problem,
# never a traceback.  (Fast: no child process reaches a boundary.)
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from faultlab.cli import main

TINY = str(Path(__file__).resolve().parents[1] / "scenarios" / "tiny.toml")


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("run", TINY, "--at", "tool/durible"), "unknown boundary 'tool/durible'"),
        (("run", TINY, "--at", "tool/durable#0"), "whole number >= 1"),
        (("explore", "--policy", "nope", TINY), "'nope' is not one of"),
        (("explore", "--shard", "3/2", TINY), "K must be between 1 and N"),
        (("explore", "--shard", "x", TINY), "must look like K/N"),
        (("explore", "--jobs", "0", TINY), "--jobs"),
        (("explore", "missing.toml"), "missing.toml: no such scenario"),
        (("run", TINY, "--at", "tool/durable", "--fault", "frost"), "unknown fault 'frost'"),
        (("inspect", "nowhere.jsonl"), "nowhere.jsonl: no such session log"),
        (("replay", "nope.toml::x#1[sigkill]", "--report-dir", "/nonexistent"), "not in"),
        (("frob",), "No such command"),
        (("explore", "--faults", "sigkill,frost", TINY), "unknown fault 'frost'"),
        (("explore", "--faults", ",", TINY), "name at least one fault"),
        (("explore", "--drive", "acp", "--backend", "sqlite", TINY),
         "--backend sqlite does not apply to the acp drive"),
        (("run", TINY, "--at", "tool/durable", "--drive", "acp", "--check-determinism"),
         "--check-determinism does not apply to the acp drive"),
        (("run", TINY, "--at", "request/durable#1", "--fault", "double-sigkill"),
         "needs two kill points K1+K2"),
        (("run", TINY, "--at", "request/durable#1+nope#1", "--fault", "double-sigkill"),
         "unknown boundary 'nope'"),
        (("run", TINY, "--at", "tool/effect#9+turn/started#1", "--fault", "double-sigkill"),
         "never reaches tool/effect#9"),
        (("explore", "--faults", "double-sigkill", "--max-double-cases", "-1", TINY),
         "--max-double-cases"),
    ],
)
def test_usage_errors_exit_2_with_one_line(args: tuple[str, ...], needle: str) -> None:
    code, stdout, stderr = invoke(*args)
    assert code == 2, stderr
    assert stdout == ""
    assert stderr.count("\n") == 1 and stderr.startswith("faultlab: error:")
    assert needle in stderr
    assert "Traceback" not in stderr


def test_a_malformed_scenario_names_file_line_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\n[[turns]]\nuser = "hi"\n[[turns.steps]]\ntxt = "x"\n')
    code, _stdout, stderr = invoke("explore", str(bad), "--no-report")
    assert code == 2
    assert f"{bad}:5: turns[0].steps[0]" in stderr and "txt" in stderr
    assert stderr.count("\n") == 1


def test_help_and_version_exit_0() -> None:
    assert invoke("--help")[0] == 0
    assert invoke("--version")[0] == 0
