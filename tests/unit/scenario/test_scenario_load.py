"""Scenario files: reading one from disk, and the errors that name the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from scenario_texts import BASE

from faultlab.scenario import ScenarioError, load_scenario

# --- loading files ----------------------------------------------------------


def test_load_scenario_reads_a_file(tmp_path: Path) -> None:
    path = tmp_path / "ok.toml"
    path.write_text(BASE, encoding="utf-8")
    assert load_scenario(path).path == str(path)


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda p: None, ": no such scenario file"),
        (lambda p: p.mkdir(), ": is a directory, not a scenario file"),
        (lambda p: p.write_bytes(b'name = "\xff"\n'), ":1: not UTF-8 (byte offset 8)"),
    ],
    ids=["missing", "directory", "not-utf8"],
)
def test_load_scenario_errors_name_the_file(tmp_path: Path, make: Any, fragment: str) -> None:
    path = tmp_path / "s.toml"
    make(path)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert info.value.path == str(path)
    assert str(info.value) == f"{path}{fragment}"
