# Adapter fields of issue 33: `{mcp_argv_json}` (the MCP command and its
# args as one JSON array, as opencode's config wants it) and `{mcp_argv}`
# spliced; `[session] reader` optional, or a user's own `module:function`
# found beside the adapter file; each bad value a one-line load error.
from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from faultlab.lab.agents import CaseVars, load_adapter, parse_adapter, render
from faultlab.lab.agents.launch import AdapterAgent, CaseWiring
from faultlab.lab.errors import LabUsageError
from faultlab.lab.read.agentlogs import read_agent_log

TOY = """\
name = "toy"
version = "1"
api = "chat"
first = ["{python}", "-c", "pass", "{mcp_argv}"]
resume = ["{python}", "-c", "pass"]

[install]
kind = "builtin"
binary = "{python}"

[[files]]
path = "{home}/opencode.json"
content = '{"mcp": {"faultlab": {"type": "local", "command": {mcp_argv_json}}}}'

[session]
glob = "{home}/*.jsonl"
"""
READER = '''
import json

def read(path):
    """Each line {"who": ..., "said": ...} as a History.to_json() message."""
    return [{"role": r["who"], "text": r["said"]} for r in map(json.loads, path.open())]

def broken(path):
    raise RuntimeError("cannot parse " + path.name)
'''


def case(tmp_path: Path) -> CaseVars:
    return CaseVars(model_url="http://127.0.0.1:1/x", mcp_command="/usr/bin/py thon",
                    mcp_args=("-m", "tools", 'say "hi"'), home=tmp_path / "home",
                    workdir=tmp_path / "work", session_id="s", prompt="p")  # fmt: skip


def test_mcp_argv_is_one_json_array_and_splices_in_argv(tmp_path: Path) -> None:
    launch = render(parse_adapter(TOY), case(tmp_path), resume=False)
    assert launch.argv[3:] == ("/usr/bin/py thon", "-m", "tools", 'say "hi"')
    content = dict(launch.files)[tmp_path / "home" / "opencode.json"]
    assert orjson.loads(content)["mcp"]["faultlab"]["command"] == [
        "/usr/bin/py thon", "-m", "tools", 'say "hi"']


def test_the_reader_is_optional(tmp_path: Path) -> None:
    adapter = parse_adapter(TOY)
    assert adapter.session.reader is None
    prepared = AdapterAgent(adapter).prepare(CaseWiring(tmp_path, "http://x", ("py",), "s"))
    log = tmp_path / "log.jsonl"
    log.write_text('{"who": "user", "said": "hi"}\n')
    assert prepared.read_session(log) is None  # copied into the report, not read


def write_adapter(tmp_path: Path, reader: str) -> Path:
    (tmp_path / "toyreader.py").write_text(READER)
    path = tmp_path / "toy.toml"
    path.write_text(TOY + f'reader = "{reader}"\n')
    return path


def test_a_reader_of_your_own_beside_the_adapter(tmp_path: Path) -> None:
    adapter = load_adapter(write_adapter(tmp_path, "toyreader:read"))
    assert adapter.session.reader == "toyreader:read"
    prepared = AdapterAgent(adapter).prepare(CaseWiring(tmp_path, "http://x", ("py",), "s"))
    log = tmp_path / "log.jsonl"
    log.write_text('{"who": "user", "said": "Refund order 7"}\n'
                   '{"who": "assistant", "said": "Charged."}\n')  # fmt: skip
    assert prepared.read_session(log) == [{"role": "user", "text": "Refund order 7"},
                                          {"role": "assistant", "text": "Charged."}]  # fmt: skip


def test_a_reader_that_fails_is_one_line_and_no_reading(tmp_path: Path) -> None:
    adapter = load_adapter(write_adapter(tmp_path, "toyreader:broken"))
    prepared = AdapterAgent(adapter).prepare(CaseWiring(tmp_path, "http://x", ("py",), "s"))
    log = tmp_path / "log.jsonl"
    log.write_text("{}\n")
    assert prepared.read_session(log) is None
    with pytest.raises(LabUsageError) as caught:
        read_agent_log("toyreader:broken", log, near=tmp_path)
    assert str(caught.value) == (f"session reader toyreader:broken on {log}: RuntimeError: "
                                 "cannot parse log.jsonl")  # fmt: skip
    with pytest.raises(LabUsageError, match="toyreader has no function missing"):
        read_agent_log("toyreader:missing", log, near=tmp_path)
    with pytest.raises(LabUsageError, match="cannot import nosuchmodule_x"):
        read_agent_log("nosuchmodule_x:read", log)


@pytest.mark.parametrize(("line", "why"), [
    ('reader = "my reader"', "must be one of claude-code"),
    ('reader = "mod:"', "or a reader of your own as module:function"),
    ('format = "x"', "unknown field (known: glob, reader)"),
])  # fmt: skip
def test_bad_session_fields_are_one_line(line: str, why: str) -> None:
    with pytest.raises(LabUsageError) as caught:
        parse_adapter(TOY + line + "\n", source="toy.toml")
    assert str(caught.value).startswith("toy.toml:")
    assert "field 'session." in str(caught.value) and why in str(caught.value)


LOCAL = TOY.replace('kind = "builtin"\nbinary = "{python}"', 'kind = "local"\nbinary = "app.mjs"')


def test_a_local_app_is_found_beside_its_adapter_and_never_installed(tmp_path: Path) -> None:
    from faultlab.lab.agents.install import install, install_dir, installed

    path = tmp_path / "toy.toml"
    path.write_text(LOCAL)
    adapter = load_adapter(path)
    assert adapter.install.kind == "local" and install_dir(adapter) == tmp_path
    assert installed(adapter) is None
    with pytest.raises(LabUsageError, match="an app of your own: faultlab installs nothing"):
        install(adapter)
    (tmp_path / "app.mjs").write_text("// the app\n")
    assert installed(adapter) == install(adapter) == tmp_path / "app.mjs"
    with pytest.raises(LabUsageError, match="a local app's adapter must be a file"):
        install_dir(parse_adapter(LOCAL))
    with pytest.raises(LabUsageError, match=r"field 'install\.packages': a local app installs"):
        parse_adapter(LOCAL.replace('kind = "local"', 'kind = "local"\npackages = ["x@1"]'))
