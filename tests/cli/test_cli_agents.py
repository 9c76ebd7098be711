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


def test_inspect_reads_an_agents_own_log(tmp_path: Path) -> None:
    # A Claude Code project log cut right after its tool call (a kill before
    # the result was written): the call is shown without a result and the
    # exit status says a model API would reject the history.
    records = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "isSidechain": False,
         "message": {"role": "user", "content": "Charge card 4242"}},
        {"type": "assistant", "uuid": "m1", "parentUuid": "u1", "isSidechain": False,
         "message": {"role": "assistant", "content": [
             {"type": "tool_use", "id": "toolu_1", "name": "mcp__faultlab__charge_card",
              "input": {"amount": 5}}]}},
        {"type": "user", "uuid": "u2", "parentUuid": "m1", "isSidechain": False,
         "message": {"role": "user", "content": "Continue."}},
    ]  # fmt: skip
    log = tmp_path / "s.jsonl"
    log.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records) + b'{"type": "assi')
    result = CliRunner().invoke(main, ["inspect", str(log), "--reader", "claude-code"])
    assert result.exit_code == 1, result.stderr
    assert "1 unreadable line(s) skipped" in result.stderr
    assert "calls without a result: charge_card {'amount': 5} (toolu_1)" in result.stderr
    assert "a model API would reject it: message 2 (user)" in result.stderr
    bad = CliRunner().invoke(main, ["inspect", str(log), "--reader", "nope"])
    assert bad.exit_code == 2 and "unknown session reader 'nope'" in bad.stderr
