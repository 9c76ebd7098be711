# What a campaign runs on, chosen and checked before anything runs: the target
# (the reference runtime or a command, with its policy and backend), the drive
# (classic or ACP) and the faults.  Each check raises `LabUsageError`.
from __future__ import annotations

from faultlab.lab.errors import LabUsageError
from faultlab.lab.faults.double import DOUBLE_FAULT
from faultlab.lab.process.target import make_target
from faultlab.probe import FAULTS

__all__ = [
    "DRIVES",
    "check_acp_backend",
    "check_drive",
    "check_drive_name",
    "check_fault",
    "make_target",
    "parse_faults",
]


# `all` on the classic drive: every fault, crashes during recovery included.
_ALL = (*FAULTS, DOUBLE_FAULT)


def check_fault(fault: str) -> None:
    if fault not in FAULTS and fault != DOUBLE_FAULT:
        known = ", ".join((*FAULTS, DOUBLE_FAULT))
        raise LabUsageError(f"unknown fault {fault!r} (faults: {known})")


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


def parse_faults(text: str, *, drive: str = "classic") -> tuple[str, ...]:
    """`all`, or a comma-separated list of fault names."""
    check_drive_name(drive)
    if drive == "acp":
        from faultlab.lab.acp.drive import parse_acp_faults

        return parse_acp_faults([n.strip() for n in text.split(",") if n.strip()] or [""])
    if text.strip() == "all":
        return _ALL
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    if not names:
        raise LabUsageError("--faults: name at least one fault, or 'all'")
    if "all" in names:  # "all,double-sigkill" (what `all` meant before issue 30) is `all`
        expanded = (n for name in names for n in (_ALL if name == "all" else (name,)))
        names = tuple(dict.fromkeys(expanded))
    for name in names:
        check_fault(name)
    return names
