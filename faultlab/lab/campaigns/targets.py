# What a campaign runs on, chosen and checked before anything runs: the target
# (the reference runtime or a command, with its policy and backend), the drive
# (classic or ACP) and the faults (read off the drive's fault table).  Each
# check raises `LabUsageError`.
from __future__ import annotations

from faultlab.lab.drives.registry import drive_faults
from faultlab.lab.errors import LabUsageError
from faultlab.lab.faults.fault import fault_named, parse_fault_names
from faultlab.lab.process.target import make_target

__all__ = [
    "DRIVES",
    "check_acp_backend",
    "check_drive",
    "check_drive_name",
    "check_fault",
    "make_target",
    "parse_faults",
]


def check_fault(fault: str, *, drive: str = "classic") -> None:
    """A usage error unless the `drive` (classic or acp) runs `fault`."""
    check_drive_name(drive)
    fault_named(drive_faults(drive), fault, drive=drive)


DRIVES = ("classic", "acp")


def check_drive_name(drive: str) -> None:
    if drive not in DRIVES:
        raise LabUsageError(f"unknown drive {drive!r} (drives: {', '.join(DRIVES)})")


def check_drive(drive: str, *, backend: str | None = None) -> None:
    """A usage error unless `drive` is known and can run with `backend`."""
    check_drive_name(drive)
    if drive == "acp":
        check_acp_backend(backend)


def check_acp_backend(backend: str | None) -> None:
    # The ACP agent keeps its sessions in JSONL (docs/acp.md): a backend
    # asked for with --drive acp would be silently ignored, so it is refused.
    if backend not in (None, "jsonl"):
        raise LabUsageError(f"--backend {backend} works with --drive classic only; "
                            "the ACP agent keeps its sessions in JSONL")  # fmt: skip


def parse_faults(
    text: str, *, drive: str = "classic", by_running: bool = True
) -> tuple[str, ...]:
    """`all` (every fault of the drive's table marked `in_all`; without those
    planned by running the target, double-sigkill, if not `by_running`: fuzz
    draws none of them), or a comma-separated list of fault names, each once,
    in the order given (`all,double-sigkill`, what `all` meant before issue
    30, is `all`)."""
    check_drive_name(drive)
    return parse_fault_names(text.split(","), drive_faults(drive), drive=drive, as_given=True,
                             by_running=by_running)  # fmt: skip
