# What the lab runs (faultlab/lab/process/target.py) and with which
# environment (faultlab/lab/process/environment.py): the target's command
# line per mode, its label, a user's command split and checked before
# anything runs, and the trimmed environment a child gets.  No process.
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from faultlab.lab.errors import LabUsageError
from faultlab.lab.process.environment import trimmed_environment
from faultlab.lab.process.target import (
    Target,
    bundled_scenarios,
    command_target,
    reference_target,
    session_files,
)


def test_the_command_line_of_each_mode(tmp_path: Path) -> None:
    target = Target(("agent",))
    base = ["agent", "s.toml", "--session-dir", str(tmp_path), "--session-id", "faultlab-case"]
    assert target.argv("s.toml", tmp_path, "run") == base
    assert target.argv("s.toml", tmp_path, "resume") == [*base, "--resume"]
    assert target.argv("s.toml", tmp_path, "repair") == [*base, "--resume", "--repair-only"]


def test_policy_and_backend_are_passed_only_when_chosen(tmp_path: Path) -> None:
    target = Target(("agent",), policy="every-event", backend="sqlite")
    assert target.argv("s.toml", tmp_path, "resume")[-5:] == [
        "--resume", "--policy", "every-event", "--backend", "sqlite",
    ]  # fmt: skip
    assert "--policy" not in Target(("agent",)).argv("s.toml", tmp_path, "run")


def test_the_reference_target_is_the_runtime_in_this_interpreter() -> None:
    target = reference_target("turn-only")
    assert target.command == (sys.executable, "-m", "faultlab.runtime")
    assert (target.reference, target.policy, target.backend) == (True, "turn-only", None)
    assert target.label == "reference runtime (policy turn-only)"
    assert reference_target(backend="sqlite").label == "reference runtime (backend sqlite)"


def test_a_users_command_is_split_like_a_shell_and_labelled_as_typed() -> None:
    target = command_target(f"{sys.executable} -m 'my agent'")
    assert target.command == (sys.executable, "-m", "my agent")
    assert not target.reference
    assert target.label == f"{sys.executable} -m 'my agent'"


@pytest.mark.parametrize(("command", "problem"), [
    ("", "--target: empty command"),
    ("'unclosed", "--target \"'unclosed\": No closing quotation"),
    ("/no/such/program --x", "--target: '/no/such/program' is not an executable program"),
])  # fmt: skip
def test_a_command_that_cannot_run_is_refused_before_anything_runs(
    command: str, problem: str
) -> None:
    with pytest.raises(LabUsageError) as caught:
        command_target(command)
    assert str(caught.value).startswith(problem)


def test_the_session_files_and_the_bundled_scenarios(tmp_path: Path) -> None:
    assert session_files(tmp_path) == (tmp_path / "session.jsonl",
                                       tmp_path / "world-ledger.jsonl")  # fmt: skip
    assert (bundled_scenarios() / "payment.toml").is_file()


def test_a_child_gets_only_the_kept_variables_and_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/bin")
    monkeypatch.setenv("FAULTLAB_SECRET_OF_THE_LAB", "x")
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    env = trimmed_environment({"FAULTLAB_ARM": "tool/logged#1", "PATH": "/child/bin"})
    assert env["PATH"] == "/child/bin"  # the child's own wins
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert env["FAULTLAB_ARM"] == "tool/logged#1"
    assert "FAULTLAB_SECRET_OF_THE_LAB" not in env and "VIRTUAL_ENV" not in env
    assert set(env) <= {"PATH", "HOME", "LANG", "LC_ALL", "PYTHONPATH", "VIRTUAL_ENV", "TMPDIR",
                        "SYSTEMROOT", "PYTHONDONTWRITEBYTECODE", "FAULTLAB_ARM"}  # fmt: skip
