# `faultlab agents list|install`: thin commands over faultlab.lab.agents.
from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from faultlab.cli import main


def test_agents_list_json_reports_the_cache_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAULTLAB_AGENTS_DIR", str(tmp_path))
    result = CliRunner().invoke(main, ["agents", "list", "--json"])
    assert result.exit_code == 0, result.stderr
    rows = {r["name"]: r for r in orjson.loads(result.stdout)}
    where = str(tmp_path / "codex-0.171.0")
    assert rows["codex"] == {"name": "codex", "version": "0.171.0", "kind": "npm",
                             "installed": False, "where": where}  # fmt: skip
    assert rows["reference"]["installed"] is True


def test_agents_install_of_an_unknown_name_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["agents", "install", "no-such-agent"])
    assert result.exit_code == 2
    assert "unknown agent 'no-such-agent'" in result.stderr
