# Where case directories go: an explicit choice wins, a RAM directory is
# used only with room to spare, otherwise the system temp dir.
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from faultlab import lab
from faultlab.lab.process import scratch


def test_an_explicit_choice_wins(tmp_path: Path) -> None:
    both = {"FAULTLAB_SCRATCH": str(tmp_path / "a"), "TMPDIR": str(tmp_path / "b")}
    assert scratch.scratch_root(both) == tmp_path / "a"
    assert scratch.scratch_root({"TMPDIR": str(tmp_path / "b")}) == tmp_path / "b"


def test_a_ram_dir_with_room_is_preferred(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scratch, "RAM_DIRS", (tmp_path,))
    monkeypatch.setattr(scratch, "MIN_RAM_FREE", 1)
    assert scratch.scratch_root({}) == tmp_path


def test_a_full_or_missing_ram_dir_falls_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scratch, "MIN_RAM_FREE", 1 << 62)  # more than any disk has
    monkeypatch.setattr(scratch, "RAM_DIRS", (tmp_path,))
    assert scratch.scratch_root({}) == Path(tempfile.gettempdir())
    monkeypatch.setattr(scratch, "RAM_DIRS", (tmp_path / "missing",))
    assert scratch.scratch_root({}) == Path(tempfile.gettempdir())


def test_the_work_dir_lives_under_the_scratch_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAULTLAB_SCRATCH", str(tmp_path))
    with lab.workdir() as work:
        assert work.parent == tmp_path and work.is_dir()
    assert not work.exists()
