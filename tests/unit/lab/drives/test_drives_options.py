# Every drive option with every drive, through the real CLI: an option a
# drive does not take is refused with exit 2, one line naming the option and
# the drive, before any child starts; an option it takes is not refused for
# being there.  The faults and what `all` means, per drive, in the registry.
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from faultlab.cli import main
from faultlab.lab import LabUsageError, drive_accepts, make_drive
from tests.conftest import REPO

TINY = str(REPO / "tests" / "scenarios" / "tiny.toml")
# The options that name each drive's target (none: classic).
_NAMING = {
    "classic": (),
    "acp": ("--drive", "acp"),
    "agent": ("--agent", "reference"),
    "app": ("--app", "langgraph:examples.langgraph_refund:build_graph"),
}
# A drive option as the user writes it, with a value, and its registry name.
_OPTIONS = {
    "policy": ("--policy", "turn-only"),
    "target": ("--target", "true"),
    "backend": ("--backend", "sqlite"),
    "spawn": ("--spawn", "exec"),
    "max_double": ("--max-double-cases", "3"),
    "delays": ("--delays", "0"),
    "repeats": ("--repeats", "2"),
    "compare": ("--compare", "durability=sync"),
}
_CELLS = [(drive, option) for drive in _NAMING for option in _OPTIONS]


@pytest.mark.parametrize(("drive", "option"), _CELLS, ids=[f"{d}-{o}" for d, o in _CELLS])
def test_every_option_with_every_drive(drive: str, option: str, tmp_path: Path) -> None:
    flag, value = _OPTIONS[option]
    # An unwritable --report-dir stops a run the drive accepted, before any child.
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    args = ["explore", *_NAMING[drive], flag, value, "--report-dir", str(blocked / "sub"), TINY]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    line = result.stderr.strip()
    assert line.count("\n") == 0, line
    # The ACP drive takes --backend, but only jsonl: its agent keeps JSONL.
    refused_value = (drive, option) == ("acp", "backend")
    if option in drive_accepts(drive) and not refused_value:
        assert "does not apply" not in line, line
    else:
        assert f"{flag} {value if refused_value else ''}".strip() + " does not apply to the " \
            f"{drive} drive" in line, line


def test_the_agent_and_app_drives_need_their_target(tmp_path: Path) -> None:
    for name, needed in (("agent", "--agent"), ("app", "--app")):
        with pytest.raises(LabUsageError, match=f"needs {needed}"):
            make_drive(name, workdir=tmp_path)


@pytest.mark.parametrize(
    ("name", "options", "all_faults"),
    [
        ("classic", {}, ("sigkill", "power-loss", "torn-write", "io-error", "io-error-enospc",
                         "fsync-error", "fsync-enospc", "cancel-in-checkpoint", "sigterm",
                         "crash-in-repair", "second-writer", "corrupt-committed",
                         "double-sigkill")),
        ("acp", {}, ("sigkill", "sigterm", "acp-cancel", "double-sigkill")),
        ("agent", {"agent": "reference"}, ("sigkill", "sigkill-agent")),
        ("app", {"app": "langgraph:examples.langgraph_refund:build_graph"},
         ("sigkill", "io-error", "second-writer")),
    ],
)  # fmt: skip
def test_what_all_means_per_drive(name: str, options: dict[str, str],
                                  all_faults: tuple[str, ...], tmp_path: Path) -> None:  # fmt: skip
    drive = make_drive(name, workdir=tmp_path, **options)
    assert drive.parse_faults(["all"]) == all_faults
    assert set(all_faults) == set(drive.faults)  # all means every fault (issue 30)
    with pytest.raises(LabUsageError, match=f"unknown fault 'frost' for the {name} drive"):
        drive.parse_faults(["sigkill", "frost"])


def test_explore_help_lists_what_all_runs_per_drive(tmp_path: Path) -> None:
    """`faultlab explore --help` names every fault `all` runs, drive by drive,
    in the drive's order (the help text is written out; this holds it true)."""
    wide = {"terminal_width": 10_000, "max_content_width": 10_000}  # no wrap at a hyphen
    help_text = CliRunner().invoke(main, ["explore", "--help"], **wide).stdout
    text = next(line for line in help_text.splitlines() if "--faults" in line)
    heads = {"classic": "Classic:", "acp": "--drive acp:", "agent": "--agent:", "app": "--app:"}
    targets = {"agent": {"agent": "reference"},
               "app": {"app": "langgraph:examples.langgraph_refund:build_graph"}}
    for name, head in heads.items():
        drive = make_drive(name, workdir=tmp_path, **targets.get(name, {}))
        listed = text[text.index(head) + len(head):].split(";")[0].split(".")[0]
        named = [w.strip(" ,") for w in listed.split("(")[0].split(",")]
        assert tuple(named) == drive.parse_faults(["all"]), (name, listed)


def test_a_timeout_must_be_positive_for_every_drive(tmp_path: Path) -> None:
    for name, options in (("classic", {}), ("agent", {"agent": "reference"})):
        with pytest.raises(LabUsageError, match=r"timeout must be a number of seconds from 0\.1"):
            make_drive(name, workdir=tmp_path, timeout=0, **options)


def test_the_classic_drive_traces_its_reference_only_for_a_fault_that_reads_it(
    tmp_path: Path,
) -> None:
    # power-loss and torn-write are judged on the fault-free run's system
    # calls; no other fault reads them, so no other campaign pays for strace.
    from faultlab.lab.drives.classic import ClassicDrive
    from faultlab.lab.faults.table import CLASSIC_FAULTS

    drive = make_drive("classic", workdir=tmp_path)
    assert isinstance(drive, ClassicDrive)
    readers = {name for name, fault in CLASSIC_FAULTS.items() if fault.needs_trace}
    assert readers == {"power-loss", "torn-write"}
    for name in CLASSIC_FAULTS:
        traced = drive.for_faults([name])
        assert isinstance(traced, ClassicDrive)
        assert traced.options.trace is (name in readers), name
    both = drive.for_faults(["sigkill", "torn-write"])
    assert isinstance(both, ClassicDrive) and both.options.trace
