# `faultlab agents new` writes an adapter that loads, and `faultlab agents
# check` names the cause of each way an adapter a user writes goes wrong:
# a wrong base URL, a wrong MCP config, a wrong session glob (each a copy
# of faultlab's own reference agent's adapter with that one mistake), and
# says plainly what a working one did.  Real agent processes, real servers.
from __future__ import annotations

import tomllib
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from faultlab.cli import main
from faultlab.lab.agents import parse_adapter
from faultlab.lab.agents.adapter import BUNDLED_DIR
from faultlab.lab.process.tree import leftovers

PAYMENT = str(Path(__file__).resolve().parents[2] / "scenarios" / "payment.toml")
REFERENCE = (BUNDLED_DIR / "reference.toml").read_text()
pytestmark = pytest.mark.realprocess
WRONG_MCP = """[[files]]
path = "{home}/wrong-mcp.json"
content = '{"mcpServers": {"faultlab": {"command": "{python}", "args": ["-c", "pass"]}}}'

[session]"""
MISTAKES = {
    "url": [('FAULTLAB_MODEL_URL = "{model_url}"',
             'FAULTLAB_MODEL_URL = "http://127.0.0.1:9/nowhere"')],
    "mcp": [('"--mcp-config", "{mcp_config}"', '"--mcp-config", "{home}/wrong-mcp.json"'),
            ("[session]", WRONG_MCP)],
    "glob": [('glob = "{home}/session/*.jsonl"', 'glob = "{home}/sessions/*.jsonl"')],
    # A glob that names the session's folder, not its file (opencode's first
    # adapter named `.local/share/opencode/*`, its `log` folder included).
    "folder": [('glob = "{home}/session/*.jsonl"', 'glob = "{home}/session*"')],
}  # fmt: skip


def check(tmp_path: Path, mistake: str | None) -> tuple[int, list[str], Path]:
    text = REFERENCE
    for old, new in MISTAKES.get(mistake or "", []):
        assert old in text
        text = text.replace(old, new)
    adapter = tmp_path / f"{mistake or 'good'}.toml"
    adapter.write_text(text)
    keep = tmp_path / "kept"
    ran = CliRunner().invoke(main, ["agents", "check", str(adapter), PAYMENT, "--json",
                                    "--keep", str(keep)])  # fmt: skip
    assert leftovers(str(tmp_path)) == []
    return ran.exit_code, list(orjson.loads(ran.stdout)["lines"]), keep


def test_a_working_adapter_is_explained(tmp_path: Path) -> None:
    status, lines, keep = check(tmp_path, None)
    assert status == 0, lines
    said = "\n".join(lines)
    assert "model: 2 request(s) on anthropic (/v1/messages)" in said
    assert 'tool: charge_card {"amount":40,"currency":"EUR"} reached faultlab\'s tool server ' \
           "(applied)" in said
    assert "finished: yes" in said and "session/session.jsonl" in said
    assert lines[-1].startswith("verdict: the fault-free case works")
    assert (keep / "blackbox-reference" / "payment.toml" / "records.jsonl").is_file()


def test_a_wrong_base_url_is_named(tmp_path: Path) -> None:
    status, lines, _ = check(tmp_path, "url")
    said = "\n".join(lines)
    assert status == 1
    assert "the agent sent the model server no request" in said
    assert "likely cause: its base URL does not reach the model server" in said
    assert "http://127.0.0.1:9/nowhere" in said  # the address it tried, from its output


def test_a_wrong_mcp_config_is_named(tmp_path: Path) -> None:
    status, lines, _ = check(tmp_path, "mcp")
    said = "\n".join(lines)
    assert status == 1 and "likely cause: its MCP setup failed first" in said
    assert "wrong-mcp.json" in said and "(the adapter's [[files]])" in said


def test_a_wrong_session_glob_is_named(tmp_path: Path) -> None:
    status, lines, _ = check(tmp_path, "glob")
    said = "\n".join(lines)
    assert status == 1
    assert "session: the glob {home}/sessions/*.jsonl matched no file it wrote" in said
    assert "session/session.jsonl" in said and "(a session-file candidate)" in said


def test_a_session_glob_naming_a_folder_is_named(tmp_path: Path) -> None:
    status, lines, _ = check(tmp_path, "folder")
    said = "\n".join(lines)
    assert status == 1
    assert "finished: yes" in said  # the agent did its part
    assert "session: faultlab refuses to copy what [session] glob names" in said
    assert "fix [session] glob" in lines[-1]


@pytest.mark.parametrize("wire", ["anthropic", "openai-chat", "openai-responses", "gemini"])
def test_agents_new_writes_a_commented_adapter_that_loads(tmp_path: Path, wire: str) -> None:
    where = tmp_path / "myagent.toml"
    ran = CliRunner().invoke(main, ["agents", "new", "myagent", "--wire", wire, "-o", str(where)])
    assert ran.exit_code == 0, ran.stderr
    text = where.read_text()
    adapter = parse_adapter(text, source=str(where))
    assert adapter.name == "myagent" and adapter.session.reader is None
    assert adapter.api == {"openai-chat": "chat", "openai-responses": "responses"}.get(wire, wire)
    assert text.count("\n#") > 20  # every field explained where it stands
    assert tomllib.loads(text)["env"]["HOME"] == "{home}"
    again = CliRunner().invoke(main, ["agents", "new", "myagent", "--wire", wire, "-o",
                                      str(where)])  # fmt: skip
    assert again.exit_code == 2 and "exists (--force overwrites it)" in again.stderr
