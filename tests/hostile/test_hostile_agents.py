# Hostile black-box agents and other local processes (issue 31, items 2, 3
# and 5), through the real CLI with faultlab's reference agent behind a
# wrapper (targets/hostileagent.py) in a user adapter:
# - only the case's agent reaches its model server: a request without the
#   case's secret, or under a guessed one, is answered 401 before its body
#   is read, noted FOREIGN_REQUEST and never counted (the case passes as it
#   would alone); a chunked body announcing 1 GiB is refused at its size line;
# - an agent's session files are copied bounded, without blocking: a FIFO,
#   a symlink or a file over the limit among them is an error case naming
#   it (TARGET_FILE_REFUSED, TARGET_OUTPUT_TOO_LARGE), never a hang;
# - faultlab writes an agent's files only inside the case's folders: an
#   adapter's `[[files]] path` outside is refused when the adapter is read
#   (exit 2, file, line, field), and a link the agent planted is not written
#   through.
# Each: its exit code, nothing left running, the scratch space emptied.
from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.realprocess

TINY = str(REPO / "tests" / "scenarios" / "tiny.toml")
AGENT_BOUND = 300.0  # seconds a command may take before it counts as hung
WRAPPER = str(Path(__file__).resolve().parent / "targets" / "hostileagent.py")
AGENT = '"{python}", "-P", "-m", "faultlab.runtime.httpagent", "--mcp-config", "{mcp_config}", ' \
        '"--session-dir", "{home}/session"'  # fmt: skip


def adapter(tmp_path: Path, mode: str, arg: str, *, files: str = "") -> str:
    """A user adapter running the reference agent behind the hostile wrapper."""
    head = f'"{{python}}", "{WRAPPER}", "{mode}", "{arg}", "--", {AGENT}'
    text = f"""name = "hostile"
version = "0.1.0"
api = "anthropic"
first = [{head}, "{{prompt}}"]
resume = [{head}, "--resume", "{{prompt}}"]

[install]
kind = "builtin"
binary = "{{python}}"

[env]
HOME = "{{home}}"
FAULTLAB_MODEL_URL = "{{model_url}}"
{files}
[session]
glob = "{{home}}/session/*.jsonl"
reader = "faultlab-log"
"""
    path = tmp_path / "hostile.toml"
    path.write_text(text)
    return str(path)


def run_case(faultlab_cli: Callable[..., Any], tmp_path: Path, agent: str) -> Any:
    scratch = tmp_path / "scratch"
    scratch.mkdir(exist_ok=True)
    # A bound, not a measure: a black-box case is a few agent processes, and
    # this machine may be shared.
    done = faultlab_cli("run", TINY, "--agent", agent, "--at", "model/request#1@0", "--json",
                        "--timeout", "120", env={"FAULTLAB_SCRATCH": str(scratch)},
                        timeout=AGENT_BOUND)  # fmt: skip
    assert done.left == (), done.left
    assert list(scratch.iterdir()) == [], list(scratch.iterdir())
    return done


def test_only_the_cases_agent_reaches_its_model_server(
    faultlab_cli: Callable[..., Any], tmp_path: Path
) -> None:
    out = tmp_path / "poked.jsonl"
    done = run_case(faultlab_cli, tmp_path, adapter(tmp_path, "poke", str(out)))
    assert done.code == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["verdict"] == "pass"
    assert "FOREIGN_REQUEST" in result["detail"] and "2 request(s)" in result["detail"]
    # The fault-free run and the case each got poked once, the same way.
    got = [json.loads(line) for line in out.read_text().splitlines()]
    assert got == [{"foreign": 401, "guessed": 401, "chunk": 400}] * 2, got


@pytest.mark.parametrize(("mode", "code"), [
    ("fifo-session", "TARGET_FILE_REFUSED"),
    ("link-session", "TARGET_FILE_REFUSED"),
    ("big-session", "TARGET_OUTPUT_TOO_LARGE"),
])  # fmt: skip
def test_an_agents_session_files_are_read_bounded_without_blocking(
    faultlab_cli: Callable[..., Any], tmp_path: Path, mode: str, code: str
) -> None:
    big = tmp_path / "big"  # on the scratch's file system: a hard link works
    with open(big, "wb") as file:
        os.truncate(file.fileno(), 3 << 30)  # 3 GiB, sparse
    done = run_case(faultlab_cli, tmp_path, adapter(tmp_path, mode, str(big)))
    big.unlink()
    assert done.code == 1, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["verdict"] == "error" and result["codes"] == [code], result
    assert "zz-planted.jsonl" in result["violations"][0]["message"]


def test_a_link_the_agent_planted_is_not_written_through(
    faultlab_cli: Callable[..., Any], tmp_path: Path
) -> None:
    done = run_case(faultlab_cli, tmp_path, adapter(tmp_path, "escape-home", "-"))
    assert done.code == 1, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["codes"] == ["TARGET_FILE_REFUSED"], result
    assert "outside the case's folders" in result["violations"][0]["message"]


def test_an_mcp_py_in_the_agents_folder_does_not_shadow_the_tool_servers_sdk(
    faultlab_cli: Callable[..., Any], tmp_path: Path
) -> None:
    # The agent writes mcp.py where it works, and starts faultlab's tool
    # server there: the server still imports the real SDK (-P), and serves.
    scenario = str(REPO / "scenarios" / "payment.toml")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    done = faultlab_cli("run", scenario, "--agent", adapter(tmp_path, "mcp-py", "-"), "--at",
                        "tool/applied#1@0", "--json", env={"FAULTLAB_SCRATCH": str(scratch)},
                        timeout=AGENT_BOUND)  # fmt: skip
    assert done.code == 0, done.stderr[-3000:]
    assert json.loads(done.stdout)["verdict"] == "pass"
    assert done.left == () and list(scratch.iterdir()) == []


@pytest.mark.parametrize("path", ["{home}/../../escaped.toml", "/tmp/escaped.toml",
                                  "{workdir}/a/../../../x"])  # fmt: skip
def test_an_adapter_file_outside_the_cases_folders_is_refused(
    faultlab_cli: Callable[..., Any], tmp_path: Path, path: str
) -> None:
    files = f'\n[[files]]\npath = "{path}"\ncontent = "x"\n'
    agent = adapter(tmp_path, "poke", str(tmp_path / "unused"), files=files)
    done = faultlab_cli("run", TINY, "--agent", agent, "--at", "model/request#1@0",
                        timeout=AGENT_BOUND)  # fmt: skip
    assert done.code == 2, done.stderr[-3000:]
    line = done.one_line_error()
    assert "hostile.toml:" in line and "'files.path'" in line and "case's folders" in line
    assert not list(tmp_path.glob("**/escaped.toml")) and done.left == ()

