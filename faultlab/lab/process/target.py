# What the lab runs: the reference runtime (`python -m faultlab.runtime`) or
# any command that honours the probe protocol and writes the log format
# (docs/probe-protocol.md).  A target is called as
#   CMD SCENARIO --session-dir DIR --session-id ID [--resume [--repair-only]] [--policy P]
#       [--backend B]
from __future__ import annotations

import shlex
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from faultlab.lab.errors import LabUsageError
from faultlab.lab.read.stores import store_for
from faultlab.scenario import POLICIES

__all__ = [
    "LEDGER_NAME",
    "LOG_NAME",
    "Mode",
    "Target",
    "bundled_scenarios",
    "check_executable",
    "command_target",
    "make_target",
    "reference_target",
    "script_target",
]

LOG_NAME = "session.jsonl"
LEDGER_NAME = "world-ledger.jsonl"
SESSION_ID = "faultlab-case"

Mode = Literal["run", "repair", "resume"]


@dataclass(frozen=True, slots=True)
class Target:
    """A command to crash-test, and the policy to ask it for (if any)."""

    command: tuple[str, ...]
    policy: str | None = None
    reference: bool = True
    backend: str | None = None  # None: each scenario's own backend
    # A Python script that patches the reference runtime in-process and runs
    # it (a zoo variant, tests/variants/README.md), the command being
    # `PYTHON SCRIPT`: under spawn "fork" its children are forked from a
    # fork server that runs the script as `__main__` in each child
    # (docs/fork-server.md, "Scripts").  None: exec'd, as every command.
    script: str | None = None

    def argv(self, scenario: str, session_dir: Path, mode: Mode) -> list[str]:
        argv = [
            *self.command,
            scenario,
            "--session-dir",
            str(session_dir),
            "--session-id",
            SESSION_ID,
        ]
        if mode == "repair":
            argv += ["--resume", "--repair-only"]
        elif mode == "resume":
            argv.append("--resume")
        if self.policy is not None:
            argv += ["--policy", self.policy]
        if self.backend is not None:
            argv += ["--backend", self.backend]
        return argv

    @property
    def label(self) -> str:
        shown = "reference runtime" if self.reference else shlex.join(self.command)
        shown += f" (policy {self.policy})" if self.policy else ""
        return shown + (f" (backend {self.backend})" if self.backend else "")


def reference_target(policy: str | None = None, backend: str | None = None) -> Target:
    return Target((sys.executable, "-m", "faultlab.runtime"), policy, True, backend)


def script_target(script: str | Path, policy: str | None = None,
                  backend: str | None = None) -> Target:  # fmt: skip
    """`python SCRIPT` for a script that patches the reference runtime and
    runs it (see `Target.script`): forked from the runtime's fork server
    (the ACP agent's for an ACP variant) under spawn "fork"."""
    path = Path(script).resolve()
    if not path.is_file():
        raise LabUsageError(f"target script {str(path)!r} does not exist")
    return Target((sys.executable, str(path)), policy, False, backend, str(path))


def command_target(command: str, policy: str | None = None, backend: str | None = None) -> Target:
    """A user's target command, split like a shell would."""
    try:
        parts = tuple(shlex.split(command))
    except ValueError as exc:
        raise LabUsageError(f"--target {command!r}: {exc}") from None
    if not parts:
        raise LabUsageError("--target: empty command")
    check_executable(parts[0])
    return Target(parts, policy, False, backend)


def check_executable(program: str) -> None:
    """A target whose program cannot be run is a usage error, not a crash later."""
    if shutil.which(program) is None:
        raise LabUsageError(f"--target: {program!r} is not an executable program (nor on PATH)")


def session_files(session_dir: Path) -> tuple[Path, Path]:
    return session_dir / LOG_NAME, session_dir / LEDGER_NAME


def bundled_scenarios() -> Path:
    """The scenarios shipped with faultlab (in the package, or the source tree)."""
    package = Path(__file__).resolve().parents[2]
    for candidate in (package / "scenarios", package.parent / "scenarios"):
        if candidate.is_dir():
            return candidate
    raise LabUsageError("the bundled scenarios are missing from this installation")


def make_target(
    *, policy: str | None = None, target: Sequence[str] | str | Target | None = None,
    backend: str | None = None,
) -> Target:  # fmt: skip
    """The reference runtime (with `policy`, `backend`), the `target`
    command, or `target` itself (a `script_target`) with `policy` and `backend`."""
    if policy is not None and policy not in POLICIES:
        raise LabUsageError(f"unknown policy {policy!r} (policies: {', '.join(POLICIES)})")
    if backend is not None:
        store_for(backend)  # an unknown backend is a usage error
    if target is None:
        return reference_target(policy, backend)
    if isinstance(target, Target):
        return replace(target, policy=policy, backend=backend)
    if isinstance(target, str):
        return command_target(target, policy, backend)
    if not target:
        raise LabUsageError("target: empty command")
    check_executable(target[0])
    return Target(tuple(target), policy, False, backend)
