# Installing the agents faultlab crash-tests, at the versions their adapters
# pin, into a cache directory of their own (one directory per name and
# version, so two versions live side by side and findings name theirs):
# npm packages with npm (they ship native binaries in platform packages),
# pip ones with `pip install --target`; a `local` app (the user's own) is
# found beside its adapter file, never installed.  Nothing here runs an agent.  An
# install fills `NAME-VERSION.partial` first, which names its owner: a failed
# install removes it, and a killed one's is removed by the next `agents`
# command (its owner is gone); one whose owner still runs is another install.
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from faultlab.lab.agents.adapter import (
    Adapter,
    bundled_adapters,
    find_adapter,
    platform_variables,
)
from faultlab.lab.errors import LabUsageError
from faultlab.lab.process.scratch import OWNER_FILE, owner_gone, write_owner

__all__ = ["AgentRow", "agents_dir", "install", "install_dir", "installed", "list_agents",
           "remove_partial"]

INSTALL_TIMEOUT = 900.0  # seconds; the npm packages are a few hundred MB each
_PARTIAL = ".partial"


@dataclass(frozen=True, slots=True)
class AgentRow:
    """One line of `faultlab agents list`."""

    name: str
    version: str
    kind: str
    installed: bool
    where: str


def agents_dir() -> Path:
    """The cache root: FAULTLAB_AGENTS_DIR, else ~/.cache/faultlab/agents."""
    override = os.environ.get("FAULTLAB_AGENTS_DIR")
    return Path(override) if override else Path.home() / ".cache" / "faultlab" / "agents"


def install_dir(adapter: Adapter, *, root: Path | None = None) -> Path:
    """Where the agent is installed; a `local` app (the user's own) lives
    where its adapter file is."""
    if adapter.install.kind == "local":
        if adapter.source == "<string>":
            raise LabUsageError(f"agent {adapter.name}: a local app's adapter must be a file "
                                "(its binary is found beside it)")  # fmt: skip
        return Path(adapter.source).resolve().parent
    return (root or agents_dir()) / f"{adapter.name}-{adapter.version}"


def _binary_path(adapter: Adapter, where: Path) -> Path:
    relative = adapter.install.binary
    for key, value in platform_variables().items():
        relative = relative.replace("{" + key + "}", value)
    return where / relative


def installed(adapter: Adapter, *, root: Path | None = None) -> Path | None:
    """The agent's binary in its install directory; None if not installed.
    A builtin agent (faultlab's own) is always there: its `binary` is a
    template filled per case, so this returns the running Python."""
    if adapter.install.kind == "builtin":
        return Path(sys.executable)
    path = _binary_path(adapter, install_dir(adapter, root=root))
    return path if path.is_file() else None


def _command(adapter: Adapter, where: Path) -> list[str]:
    if adapter.install.kind == "npm":
        npm = shutil.which("npm")
        if npm is None:
            raise LabUsageError(f"installing {adapter.name} needs npm, which is not on PATH")
        return [npm, "install", "--prefix", str(where), "--no-audit", "--no-fund",
                *adapter.install.packages]  # fmt: skip
    return [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
            "--target", str(where), *adapter.install.packages]  # fmt: skip


def install(adapter: Adapter, *, root: Path | None = None, force: bool = False,
            say: Callable[[str], None] = lambda _line: None) -> Path:  # fmt: skip
    """Install the adapter's pinned packages; return the binary's path.
    Installs into a sibling directory first and renames it into place, so a
    killed install never leaves a half-filled directory that looks installed."""
    if adapter.install.kind == "builtin":
        return Path(sys.executable)
    if adapter.install.kind == "local":  # the user's own app: set up by them, never by faultlab
        found = installed(adapter)
        if found is None:
            raise LabUsageError(f"{adapter.name} is an app of your own: faultlab installs "
                                f"nothing, and its binary {adapter.install.binary!r} is not in "
                                f"{install_dir(adapter)}")  # fmt: skip
        say(f"{adapter.name} {adapter.version}: an app of your own, {found}")
        return found
    final = install_dir(adapter, root=root)
    remove_partial(final.parent)  # a killed install's leftovers
    found = installed(adapter, root=root)
    if found is not None and not force:
        say(f"{adapter.name} {adapter.version}: already installed in {found.parent}")
        return found
    staging = final.with_name(final.name + _PARTIAL)
    if staging.exists():
        raise LabUsageError(f"{staging} is in use: another install of {adapter.name} is "
                            "running (or remove the folder)")  # fmt: skip
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        staging.mkdir()
    except OSError as exc:
        raise LabUsageError(f"cannot install into {final.parent}: {exc.strerror} (set "
                            "FAULTLAB_AGENTS_DIR, or HOME, to a writable folder)") from None
    try:
        write_owner(staging)
        _run_install(adapter, staging, say)
        shutil.rmtree(final, ignore_errors=True)
        os.remove(staging / OWNER_FILE)
        staging.rename(final)
    except BaseException:  # a failed or interrupted install leaves no .partial
        shutil.rmtree(staging, ignore_errors=True)
        raise
    path = _binary_path(adapter, final)
    say(f"{adapter.name} {adapter.version}: installed, {path}")
    return path


def _run_install(adapter: Adapter, staging: Path, say: Callable[[str], None]) -> None:
    command = _command(adapter, staging)
    say(f"{adapter.name} {adapter.version}: {' '.join(command)}")
    try:
        done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=INSTALL_TIMEOUT, check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        raise LabUsageError(f"installing {adapter.name} took over {INSTALL_TIMEOUT:.0f}s; "
                            "is the package registry reachable?") from None  # fmt: skip
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise LabUsageError(f"installing {adapter.name} failed (exit {done.returncode}): "
                            f"{tail[0]}")  # fmt: skip
    if not _binary_path(adapter, staging).is_file():
        raise LabUsageError(f"installed {adapter.name}, but its binary "
                            f"{adapter.install.binary!r} is not in the install")  # fmt: skip


def remove_partial(root: Path) -> list[Path]:
    """Remove every `*.partial` install under `root` whose owner is gone (a
    killed install's); one that names no owner is an older faultlab's,
    removed too (no install runs without an owner any more)."""
    removed = []
    with contextlib.suppress(OSError):
        for path in root.glob("*" + _PARTIAL):
            if not path.is_dir() or path.is_symlink():
                continue
            if owner_gone(path) is not False:
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
    return removed


def list_agents(names: list[str] | None = None, *, root: Path | None = None) -> list[AgentRow]:
    """The bundled agents (or the named ones / adapter files) and whether installed."""
    adapters = [find_adapter(n) for n in names] if names else bundled_adapters()
    remove_partial(root or agents_dir())  # a killed install's leftovers
    rows = []
    for adapter in adapters:
        found = installed(adapter, root=root)
        where = ("(built in)" if adapter.install.kind == "builtin"
                 else str(install_dir(adapter, root=root)))  # fmt: skip
        rows.append(AgentRow(adapter.name, adapter.version, adapter.install.kind,
                             found is not None, where))  # fmt: skip
    return rows
