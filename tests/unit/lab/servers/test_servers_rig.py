# The server rig of one case (faultlab/lab/servers/rig.py): the directory it
# empties, the gate's socket and the model server it starts and closes, the
# records it writes, and how it watches a child: exited, fired, or late.
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import orjson
import pytest

from faultlab.lab.servers import KillPoint
from faultlab.lab.servers.rig import ServerRig
from faultlab.scenario import load_scenario
from tests.conftest import SCENARIOS


class _Child:
    """A plain subprocess as the rig sees a child."""

    def __init__(self, *argv: str) -> None:
        self.process = subprocess.Popen(argv)

    def wait(self, timeout: float) -> int | None:
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill_tree(self, timeout: float = 30.0) -> int | None:
        self.process.kill()
        return self.wait(timeout)


def test_it_owns_the_case_directory_the_gate_and_the_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAULTLAB_TOOL_FORK", "0")  # the tool server exec'd (toolrelay.py)
    where = tmp_path / "case"
    where.mkdir()
    (where / "stale").write_text("from an earlier run")
    rig = ServerRig(where, KillPoint("tool/started", 1, 0), timeout=5)
    assert not (where / "stale").exists()
    assert rig.bridge.path.is_socket() and rig.model is None and rig.forward == {}
    assert rig.tool_server("s.toml")[1:] == ("-I", "-m", "faultlab.lab.servers.mcptools", "s.toml",
                                             "--ledger", str(where / "world.jsonl"),
                                             "--gate", str(rig.bridge.path))  # fmt: skip
    assert rig.outputs("run1-run") == (where / "run1-run.stdout", where / "run1-run.stderr")
    rig.gate.reach("tool/started", name="charge")
    rig.gate.note("app/exit", run=1)
    shown = rig.write_json("x.json", {"b": 1})
    (where / "run1-run.stderr").write_bytes(b"a" * 10 + b"tail")
    assert orjson.loads(shown.read_bytes()) == {"b": 1}
    assert rig.tail("run1-run.stderr", 4) == "tail" and rig.tail("missing.stderr") == ""
    with rig:
        pass
    assert rig.gate.released.is_set() and not rig.bridge.path.parent.exists()
    lines = rig.records.read_bytes().splitlines()
    assert [orjson.loads(line).get("boundary") or orjson.loads(line)["fact"] for line in lines] \
        == ["tool/started", "app/exit"]  # fmt: skip
    assert lines[0].index(b'"boundary"') < lines[0].index(b'"name"')  # keys sorted


def test_it_serves_the_scripted_model_when_asked(tmp_path: Path) -> None:
    scenario = load_scenario(SCENARIOS / "payment.toml")
    rig = ServerRig(tmp_path / "case", None, timeout=5, model=scenario)
    try:
        assert rig.model is not None and rig.model_url == rig.model.url
        assert rig.forward == {rig.model.port: str(rig.bridge.path.parent / "model")}
    finally:
        rig.close()
    assert rig.records.read_bytes() == b""


def test_it_watches_a_child_to_its_exit_the_fired_gate_or_its_deadline(tmp_path: Path) -> None:
    rig = ServerRig(tmp_path / "case", KillPoint("model/request", 1, 0), timeout=5)
    try:
        far = time.monotonic() + 30
        assert rig.watch(_Child("true"), far, armed=True) == ("exited", 0)
        sleeper = _Child("sleep", "30")
        assert rig.watch(sleeper, time.monotonic() + 0.05, armed=True) == ("late", -signal.SIGKILL)
        rig.gate.reach("model/request")
        sleeper = _Child("sleep", "30")
        assert rig.watch(sleeper, far, armed=True) == ("fired", None)
        assert sleeper.wait(0) is None  # the drive does its fault
        sleeper.kill_tree()
        quick = _Child("sleep", "0.05")
        assert rig.watch(quick, far, armed=False) == ("exited", 0)  # unarmed: fired is ignored
    finally:
        rig.close()


def test_the_tool_server_keeps_the_labs_pythonpath_not_the_agents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The lab's own PYTHONPATH (faultlab from a checkout) is put back inside
    # an isolated (-I) interpreter; the agent's, given to the process that
    # starts the tool server, is ignored (a broken `mcptools` there too).
    repo = str(Path(__file__).resolve().parents[4])
    monkeypatch.setenv("PYTHONPATH", repo)
    monkeypatch.setenv("FAULTLAB_TOOL_FORK", "0")  # the exec'd form, also the shim's fallback
    rig = ServerRig(tmp_path / "case", None, timeout=5)
    try:
        command = rig.tool_server("s.toml")
    finally:
        rig.close()
    assert command[1:3] == ("-I", "-c") and repr(repo) in command[3]
    shadow = tmp_path / "agent-path" / "faultlab"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('the agent shadowed faultlab')\n")
    env = {**os.environ, "PYTHONPATH": str(shadow.parent)}
    done = subprocess.run([*command[:4], "--help"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0 and "--ledger" in done.stdout, done.stderr
