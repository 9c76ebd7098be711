# The bundled adapters of Gemini CLI, opencode and Qwen Code, rendered for
# one case without running the agents: each config file they write parses
# (JSON) and points the agent at the case's model server and faultlab's MCP
# tool server, and the agent is kept offline (telemetry, updates off).  The
# real agents run in tests/integration/test_blackbox_cli_agents.py.
from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from faultlab.lab.agents import CaseVars, Launch, find_adapter, render
from faultlab.lab.read.naming import ToolNaming

URL = "http://127.0.0.1:4321/faultlab-s3cret"
MCP = ("/usr/bin/python3", "-m", "faultlab.lab.servers.mcptools", "payment.toml")


def _launch(name: str, tmp_path: Path, *, resume: bool = False) -> Launch:
    case = CaseVars(model_url=URL, mcp_command=MCP[0], mcp_args=MCP[1:],
                    home=tmp_path / "home", workdir=tmp_path / "work", session_id="sid-1",
                    prompt="Charge it.", model_key="s3cret")  # fmt: skip
    return render(find_adapter(name), case, resume=resume, binary=Path("/opt/agent"),
                  install_dir=tmp_path / "install")  # fmt: skip


def _config(launch: Launch, ending: str) -> dict[str, Any]:
    [content] = [text for path, text in launch.files if path.name == ending]
    value = orjson.loads(content)
    assert isinstance(value, dict)
    return value


@pytest.mark.parametrize("name", ["gemini-cli", "qwen-code"])
def test_gemini_style_settings_reach_faultlab_and_stay_offline(tmp_path: Path,
                                                               name: str) -> None:  # fmt: skip
    launch = _launch(name, tmp_path)
    settings = _config(launch, "settings.json")
    server = settings["mcpServers"]["faultlab"]
    assert [server["command"], *server["args"]] == list(MCP)
    assert settings["privacy"]["usageStatisticsEnabled"] is False
    assert settings["telemetry"]["enabled"] is False
    # The model and the session are the case's, never a default or a picker.
    assert launch.argv[launch.argv.index("--model") + 1] == "faultlab-model"
    assert launch.argv[launch.argv.index("--session-id") + 1] == "sid-1"
    again = _launch(name, tmp_path, resume=True)
    assert again.argv[again.argv.index("--resume") + 1] == "sid-1"
    assert "s3cret" not in " ".join(launch.argv)  # the secret stays out of argv


def test_gemini_cli_base_url_key_and_tool_names(tmp_path: Path) -> None:
    launch = _launch("gemini-cli", tmp_path)
    assert launch.env["GOOGLE_GEMINI_BASE_URL"] == URL
    assert launch.env["GEMINI_API_KEY"] == "s3cret"
    assert launch.env["GEMINI_TELEMETRY_ENABLED"] == "false"
    naming = ToolNaming(find_adapter("gemini-cli").tool_name)
    assert naming.wire("charge_card") == "mcp_faultlab_charge_card"


def test_qwen_code_keeps_mcp_tools_out_of_tool_search(tmp_path: Path) -> None:
    launch = _launch("qwen-code", tmp_path)
    assert launch.argv[launch.argv.index("--exclude-tools") + 1] == "tool_search"
    assert launch.env["OPENAI_BASE_URL"] == URL + "/v1"
    assert launch.session_glob.endswith("/chats/sid-1.jsonl")


def test_opencode_config_provider_mcp_argv_and_offline_switches(tmp_path: Path) -> None:
    launch = _launch("opencode", tmp_path)
    config = _config(launch, "opencode.json")
    provider = config["provider"]["faultlab"]
    assert provider["options"]["baseURL"] == URL + "/v1"
    # The key is read from the environment, not written into the file.
    assert provider["options"]["apiKey"] == "{env:FAULTLAB_API_KEY}"
    assert launch.env["FAULTLAB_API_KEY"] == "s3cret"
    assert config["mcp"]["faultlab"]["command"] == list(MCP)
    assert config["autoupdate"] is False
    for switch in ("OPENCODE_DISABLE_AUTOUPDATE", "OPENCODE_DISABLE_MODELS_FETCH",
                   "OPENCODE_DISABLE_DEFAULT_PLUGINS", "OPENCODE_DISABLE_LSP_DOWNLOAD"):
        assert launch.env[switch] == "1"
    # A title given spares opencode's extra model request that names the session.
    assert "--title" in launch.argv
    assert "--continue" in _launch("opencode", tmp_path, resume=True).argv
    assert ToolNaming(find_adapter("opencode").tool_name).wire("charge_card") == (
        "faultlab_charge_card")
