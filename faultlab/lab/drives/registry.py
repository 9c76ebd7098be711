# The drives by name, the options each accepts, and the one way to build one:
# `make_drive` refuses an option that does not apply to the drive (naming
# both), so no drive silently ignores what a user asked for.  Also each
# drive's fault table, and which drives run a fault, read off those tables.
from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from faultlab.lab.drives.protocol import Drive
from faultlab.lab.errors import LabUsageError, check_timeout
from faultlab.lab.faults.double import DEFAULT_MAX_DOUBLE
from faultlab.lab.faults.fault import Fault

__all__ = [
    "DRIVE_NAMES",
    "drive_accepts",
    "drive_faults",
    "drives_running",
    "kill_everything",
    "make_drive",
]

# drive -> the options it takes beyond the engine's own (jobs, shard,
# faults, timeout, selection, progress, report), as `make_drive` keywords.
_ACCEPTS: Mapping[str, frozenset[str]] = {
    "classic": frozenset({"policy", "target", "backend", "spawn", "max_double",
                          "check_determinism"}),
    "acp": frozenset({"policy", "target", "backend", "spawn", "max_double"}),
    "agent": frozenset({"agent", "delays", "repeats"}),
    "app": frozenset({"app", "compare", "spawn", "styles"}),
}  # fmt: skip
DRIVE_NAMES = tuple(_ACCEPTS)
_REQUIRED = {"agent": "agent", "app": "app"}
# drive -> where its fault table is (imported on first use: the ACP drive's
# imports the ACP SDK).
_TABLES: Mapping[str, tuple[str, str]] = {
    "classic": ("faultlab.lab.faults.table", "CLASSIC_FAULTS"),
    "acp": ("faultlab.lab.acp.faults", "ACP_FAULTS"),
    "agent": ("faultlab.lab.blackbox.faults", "BLACKBOX_FAULTS"),
    "app": ("faultlab.lab.apps.faults", "APP_FAULTS"),
}


def drive_accepts(name: str) -> frozenset[str]:
    """The options drive `name` takes (a usage error for an unknown drive)."""
    accepts = _ACCEPTS.get(name)
    if accepts is None:
        raise LabUsageError(f"unknown drive {name!r} (drives: {', '.join(DRIVE_NAMES)})")
    return accepts


def drive_faults(name: str) -> Mapping[str, Fault[Any]]:
    """Drive `name`'s fault table, by fault name in report order (a usage
    error for an unknown drive)."""
    drive_accepts(name)
    module, table = _TABLES[name]
    faults: Mapping[str, Fault[Any]] = getattr(importlib.import_module(module), table)
    return faults


def drives_running(fault: str) -> tuple[str, ...]:
    """The drives that run `fault`, read off their tables."""
    return tuple(name for name in DRIVE_NAMES if fault in drive_faults(name))


def _option(name: str) -> str:
    return "--" + {"max_double": "max-double-cases"}.get(name, name.replace("_", "-"))


def make_drive(name: str, *, workdir: Path, timeout: float = 60.0, **options: Any) -> Drive:
    """Drive `name` with `options` (None: not given).  An option the drive does
    not take, a missing required one or a bad value is a `LabUsageError`."""
    accepts = drive_accepts(name)
    given = {key: value for key, value in options.items() if value is not None}
    for key in sorted(given):
        if key not in accepts:
            takes = ", ".join(sorted(_option(k) for k in accepts))
            raise LabUsageError(f"{_option(key)} does not apply to the {name} drive "
                                f"(it takes {takes})")  # fmt: skip
    required = _REQUIRED.get(name)
    if required is not None and required not in given:
        raise LabUsageError(f"the {name} drive needs {_option(required)}")
    timeout = check_timeout(timeout)
    max_double = given.pop("max_double", DEFAULT_MAX_DOUBLE)
    if isinstance(max_double, bool) or not isinstance(max_double, int) or max_double < 0:
        raise LabUsageError(f"max double cases must be >= 0 (0: all), not {max_double}")
    build = _BUILDERS[name]
    return build(workdir, timeout, max_double, given)


def _classic(workdir: Path, timeout: float, max_double: int, given: dict[str, Any]) -> Drive:
    from faultlab.lab.drives.classic import ClassicDrive
    from faultlab.lab.process.reference import LabOptions
    from faultlab.lab.process.target import make_target

    target = make_target(policy=given.get("policy"), target=given.get("target"),
                         backend=given.get("backend"))  # fmt: skip
    options = LabOptions(target, workdir, timeout, given.get("spawn", "fork"))
    return ClassicDrive(options, max_double,
                        check_determinism=bool(given.get("check_determinism")))  # fmt: skip


def _acp(workdir: Path, timeout: float, max_double: int, given: dict[str, Any]) -> Drive:
    from faultlab.lab.acp.drive import AcpOptions, acp_target
    from faultlab.lab.drives.acp import AcpDrive
    from faultlab.lab.process.target import Target
    from faultlab.scenario import POLICIES

    backend = given.get("backend")
    # The ACP agent keeps its sessions in JSONL (docs/acp.md): another
    # backend would be silently ignored, so it is refused.
    if backend not in (None, "jsonl"):
        raise LabUsageError(f"--backend {backend} does not apply to the acp drive: "
                            "the ACP agent keeps its sessions in JSONL")  # fmt: skip
    policy, target = given.get("policy"), given.get("target")
    if policy is not None and policy not in POLICIES:
        raise LabUsageError(f"unknown policy {policy!r} (policies: {', '.join(POLICIES)})")
    script = None
    if isinstance(target, Target):  # a zoo variant's script (`script_target`)
        script, target = target.script, list(target.command)
    options = AcpOptions(acp_target(target), workdir, timeout, policy, reference=target is None,
                         spawn=given.get("spawn", "fork"), script=script)  # fmt: skip
    return AcpDrive(options, max_double)


def _agent(workdir: Path, timeout: float, _max_double: int, given: dict[str, Any]) -> Drive:
    from faultlab.lab.agents.launch import agent_launcher
    from faultlab.lab.blackbox.drive import BlackboxOptions
    from faultlab.lab.drives.agent import AgentDrive
    from faultlab.lab.servers.points import DEFAULT_DELAYS_MS, parse_delays

    delays = given.get("delays", DEFAULT_DELAYS_MS)
    if isinstance(delays, str):
        delays = parse_delays(delays)
    if not delays:
        raise LabUsageError("--delays: name at least one delay")
    options = BlackboxOptions(agent_launcher(given["agent"]), workdir, timeout,
                              tuple(delays), given.get("repeats", 1))  # fmt: skip
    return AgentDrive(options, given["agent"])


def _app(workdir: Path, timeout: float, _max_double: int, given: dict[str, Any]) -> Drive:
    from faultlab.lab.apps.drive import AppOptions, parse_app
    from faultlab.lab.drives.app import AppDrive, parse_compare

    app = given["app"]
    compare = given.get("compare")
    if isinstance(compare, str) or compare is None:
        modes = parse_compare(compare, framework=parse_app(app)[0])
    else:
        modes = tuple(compare)
    options = AppOptions(app, workdir / modes[0], modes[0], timeout=timeout,
                         spawn=given.get("spawn", "fork"))  # fmt: skip
    if "styles" in given:  # the resume styles planned (the library's; the CLI plans all)
        options = replace(options, styles=tuple(given["styles"]))
    return AppDrive(options, workdir, modes)


_BUILDERS: Mapping[str, Callable[[Path, float, int, dict[str, Any]], Drive]] = {
    "classic": _classic, "acp": _acp, "agent": _agent, "app": _app,
}  # fmt: skip


def kill_everything(drives: Sequence[Drive] = ()) -> None:
    """Kill every process any drive started in this process (interrupt or a
    broken run), with its whole tree: every drive's processes are in the
    one registry of live processes (faultlab/lab/process/live.py), which
    each drive's `kill_all` walks too."""
    from faultlab.lab.process.live import kill_all

    for drive in drives:
        drive.kill_all()
    kill_all()
