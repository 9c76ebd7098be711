# Adapter files: the bundled ones load, bad files fail with one line naming
# the file, the line and the field, and templates fill per case.
from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

import orjson
import pytest

from faultlab.lab.agents import (
    CaseVars,
    bundled_adapters,
    find_adapter,
    installed,
    list_agents,
    parse_adapter,
    render,
    write_files,
)
from faultlab.lab.errors import LabUsageError

GOOD = """\
name = "toy"
version = "1.2.3"
api = "responses"
first = ["{binary}", "run", "{prompt}", "{mcp_args}"]
resume = ["{binary}", "resume", "{session_id}"]

[install]
kind = "npm"
packages = ["toy-agent@1.2.3"]
binary = "node_modules/toy-{npm_platform}/toy"

[env]
HOME = "{home}"
TOY_URL = "{model_url}/v1"

[[files]]
path = "{home}/.toy/config.toml"
content = '''
command = {mcp_command_json}
args = {mcp_args_json}
'''

[session]
glob = "{home}/.toy/{session_id}.jsonl"
reader = "codex"
"""


def _case(tmp_path: Path) -> CaseVars:
    return CaseVars(model_url="http://127.0.0.1:4321", mcp_command="/usr/bin/py thon",
                    mcp_args=("-m", "tools", 'say "hi"'), home=tmp_path / "home",
                    workdir=tmp_path / "work", session_id="sid-1", prompt="charge it",
                    python="/usr/bin/python3")  # fmt: skip


def test_bundled_adapters_load_with_the_documented_names() -> None:
    names = {a.name for a in bundled_adapters()}
    assert names == {"claude-code", "claude-agent-sdk", "codex", "openai-agents",
                     "deepseek-harness", "gemini-cli", "opencode", "qwen-code", "reference"}
    assert find_adapter("codex").api == "responses"
    assert find_adapter("claude-code").api == "anthropic"


def test_render_fills_argv_env_files_and_splices_mcp_args(tmp_path: Path) -> None:
    adapter = parse_adapter(GOOD, source="toy.toml")
    launch = render(adapter, _case(tmp_path), resume=False, binary=Path("/opt/toy"))
    assert launch.argv == ("/opt/toy", "run", "charge it", "-m", "tools", 'say "hi"')
    assert launch.env["TOY_URL"] == "http://127.0.0.1:4321/v1"
    assert launch.session_glob == f"{tmp_path}/home/.toy/sid-1.jsonl"
    again = render(adapter, _case(tmp_path), resume=True, binary=Path("/opt/toy"))
    assert again.argv == ("/opt/toy", "resume", "sid-1")
    write_files(launch)
    # The _json forms keep a config file valid whatever the values hold.
    written = tomllib.loads((tmp_path / "home/.toy/config.toml").read_text())
    assert written == {"command": "/usr/bin/py thon", "args": ["-m", "tools", 'say "hi"']}
    mcp = orjson.loads(launch.mcp_config.read_bytes())
    assert mcp["mcpServers"]["faultlab"]["args"] == ["-m", "tools", 'say "hi"']


def test_bundled_codex_config_is_valid_toml_with_the_lab_servers(tmp_path: Path) -> None:
    launch = render(find_adapter("codex"), _case(tmp_path), resume=False, binary=Path("/x"))
    (_path, content), = [f for f in launch.files if f[0].name == "config.toml"]
    config = tomllib.loads(content)
    provider = config["model_providers"]["faultlab"]
    assert provider["base_url"] == "http://127.0.0.1:4321/v1"
    assert (provider["wire_api"], provider["request_max_retries"]) == ("responses", 0)
    assert config["mcp_servers"]["faultlab"]["args"] == ["-m", "tools", 'say "hi"']
    assert config["mcp_servers"]["faultlab"]["required"] is True
    assert launch.argv[-1] == "charge it"


def test_an_uninstalled_agent_says_how_to_install_it(tmp_path: Path) -> None:
    with pytest.raises(LabUsageError, match="faultlab agents install claude-code"):
        render(find_adapter("claude-code"), _case(tmp_path), resume=False, binary=None)


@pytest.mark.parametrize(("old", "new", "expected"), [
    ('api = "responses"', 'api = "grpc"', r"toy.toml:3: field 'api': must be one of"),
    ('kind = "npm"', 'kind = "apt"', r"toy.toml:8: field 'install.kind'"),
    ('packages = ["toy-agent@1.2.3"]', 'packages = ["toy-agent"]',
     r"toy.toml:9: field 'install.packages': 'toy-agent' is not pinned"),
    ('packages = ["toy-agent@1.2.3"]', 'packages = ["toy-agent@1.2.4"]',
     r"field 'install.packages': the first package .* must be pinned to version '1.2.3'"),
    ('"resume", "{session_id}"', '"resume", "{sesion_id}"',
     r"toy.toml:5: field 'resume': unknown template variable \{sesion_id\}"),
    ('reader = "codex"', 'reader = "vim"', r"toy.toml:\d+: field 'session.reader'"),
    ('name = "toy"', 'name = "Toy Agent"', r"toy.toml:1: field 'name'"),
    ('version = "1.2.3"\n', 'version = "1.2.3"\ncolour = "red"\n',
     r"toy.toml:3: field 'colour': unknown field"),
])  # fmt: skip
def test_a_bad_field_is_named_with_its_file_and_line(old: str, new: str, expected: str) -> None:
    assert old in GOOD
    with pytest.raises(LabUsageError, match=expected):
        parse_adapter(GOOD.replace(old, new, 1), source="toy.toml")


def test_a_top_level_field_after_a_table_is_explained() -> None:
    # TOML puts a key written after [env] into env: the classic mistake.
    text = GOOD.replace('TOY_URL = "{model_url}/v1"', 'TOY_URL = "{model_url}/v1"\nretries = 3')
    with pytest.raises(LabUsageError, match=r"toy.toml:\d+: field 'env.retries': must be a "
                       "string.*before the \\[env\\] table"):  # fmt: skip
        parse_adapter(text, source="toy.toml")


def test_invalid_toml_and_missing_tables_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(LabUsageError, match=r"^bad.toml: not valid TOML: .*line 2"):
        parse_adapter('name = "x"\nversion = = 2\n', source="bad.toml")
    no_session = GOOD.split("[session]")[0]
    with pytest.raises(LabUsageError, match=r"field 'session': missing"):
        parse_adapter(no_session, source="toy.toml")
    with pytest.raises(LabUsageError, match="cannot read the agent adapter"):
        find_adapter(str(tmp_path / "absent.toml"))
    with pytest.raises(LabUsageError, match="unknown agent 'nope'"):
        find_adapter("nope")


def test_installed_and_list_agents_follow_the_cache_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAULTLAB_AGENTS_DIR", str(tmp_path))
    codex = find_adapter("codex")
    assert installed(codex) is None
    rows = {r.name: r for r in list_agents()}
    assert not rows["codex"].installed and rows["reference"].installed
    assert rows["codex"].where == str(tmp_path / "codex-0.171.0")
    # A file where the adapter's binary path says is what "installed" means.
    from faultlab.lab.agents.adapter import platform_variables

    rel = codex.install.binary.format(**platform_variables())
    binary = tmp_path / "codex-0.171.0" / rel
    binary.parent.mkdir(parents=True)
    binary.write_bytes(b"")
    assert installed(codex) == binary


@pytest.mark.parametrize("path", ["{home}/../x", "/tmp/x", "{workdir}/a/../../x", "x/{home}/y",
                                  "{session_id}/x"])  # fmt: skip
def test_a_file_path_outside_the_cases_folders_is_a_load_error(path: str) -> None:
    text = GOOD.replace('path = "{home}/.toy/config.toml"', f'path = "{path}"')
    with pytest.raises(LabUsageError, match=r"toy.toml:\d+: field 'files.path': .*case's folders"):
        parse_adapter(text, source="toy.toml")


def test_files_are_not_written_through_a_link_the_agent_planted(tmp_path: Path) -> None:
    from faultlab.userfiles import TARGET_FILE_REFUSED, TargetFileError

    launch = render(parse_adapter(GOOD, source="toy.toml"), _case(tmp_path), resume=False,
                    binary=Path("/opt/toy"))  # fmt: skip
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / ".toy").symlink_to(outside)  # the folder: a link out
    with pytest.raises(TargetFileError) as refused:
        write_files(launch)
    assert refused.value.code == TARGET_FILE_REFUSED
    assert "outside the case's folders" in str(refused.value)
    (tmp_path / "home" / ".toy").unlink()
    (tmp_path / "home" / ".toy").mkdir()
    (tmp_path / "home" / ".toy" / "config.toml").symlink_to(outside / "config.toml")  # the file
    with pytest.raises(TargetFileError, match="cannot be written"):
        write_files(launch)
    assert list(outside.iterdir()) == []


def test_the_model_key_is_a_template_variable(tmp_path: Path) -> None:
    text = GOOD.replace('TOY_URL = "{model_url}/v1"', 'TOY_URL = "{model_url}/v1"\n'
                        'TOY_KEY = "{model_key}"')  # fmt: skip
    case = dataclasses.replace(_case(tmp_path), model_key="s3cret")
    launch = render(parse_adapter(text, source="toy.toml"), case, resume=False,
                    binary=Path("/opt/toy"))  # fmt: skip
    assert launch.env["TOY_KEY"] == "s3cret"
