# A zoo variant's script forked from the fork server (issue 34, item 2;
# faultlab.runtime.forkchild.run_script, docs/fork-server.md "Scripts"):
# each child runs the script as `python SCRIPT ARGS` runs it
# (`__main__`, its argv, its folder first on sys.path, the request's cwd and
# environment, the exit status of sys.exit, 1 and a traceback for an
# uncaught exception), and a variant's case forked leaves the files and the
# verdict of the same case exec'd.
from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest

from faultlab import lab
from faultlab.lab.campaigns.determinism import check_determinism
from faultlab.lab.campaigns.explore import run_one
from faultlab.lab.errors import LabUsageError
from faultlab.lab.oracle.case import Case
from faultlab.lab.process.forkserver import shared_server
from faultlab.lab.process.reference import LabOptions, run_reference, run_to_exit
from faultlab.lab.process.spawn import Child
from faultlab.lab.process.target import script_target
from faultlab.scenario import load_scenario

pytestmark = pytest.mark.realprocess
ROOT = Path(__file__).resolve().parents[2]
VARIANTS = ROOT / "tests" / "variants"

_SCRIPT = """\
import json, os, sys
import helper_beside_me  # found only if the script's folder is first on sys.path
seen = {"name": __name__, "argv": sys.argv, "path0": sys.path[0], "cwd": os.getcwd(),
        "env": os.environ.get("SCRIPT_TEST")}
with open(os.environ["SCRIPT_OUT"], "w") as out:
    json.dump(seen, out)
how = sys.argv[1]
if how == "raise":
    raise RuntimeError("uncaught in the script")
if how == "text":
    sys.exit("a message for stderr")
sys.exit(int(how))
"""


def _run(script: Path, how: str, out: Path, cwd: Path, *, forked: bool) -> tuple[int, str]:
    """The script run once (forked from its server, or exec'd): exit status, stderr."""
    stderr = out.with_suffix(".stderr")
    argv = [sys.executable, str(script), how]
    env = {"SCRIPT_OUT": str(out), "SCRIPT_TEST": "given"}
    if forked:
        child = Child(argv, stderr_path=stderr, env=env, cwd=str(cwd), server=shared_server(),
                      server_argv=argv[2:], script=str(script), let_go=False)  # fmt: skip
    else:
        child = Child(argv, stderr_path=stderr, env=env, cwd=str(cwd))
    done = run_to_exit(child, 60.0)
    return done.returncode, done.stderr


@pytest.mark.parametrize(("how", "code"), [("0", 0), ("5", 5), ("raise", 1), ("text", 1)])
def test_a_forked_script_runs_as_the_interpreter_runs_it(
    how: str, code: int, tmp_path: Path
) -> None:
    folder = tmp_path / "scripts"
    folder.mkdir()
    (folder / "helper_beside_me.py").write_text("")
    script = folder / "probe_script.py"
    script.write_text(_SCRIPT)
    seen = {}
    for forked in (True, False):
        out = tmp_path / f"seen-{forked}.json"
        status, stderr = _run(script, how, out, tmp_path, forked=forked)
        assert status == code, stderr
        if how == "raise":
            assert "RuntimeError: uncaught in the script" in stderr
        if how == "text":
            assert "a message for stderr" in stderr
        seen[forked] = orjson.loads(out.read_bytes())
    assert seen[True] == seen[False]
    assert seen[True]["name"] == "__main__" and seen[True]["argv"] == [str(script), how]
    assert seen[True]["path0"] == str(folder) and seen[True]["env"] == "given"


@pytest.mark.parametrize(("variant", "scenario", "at", "code"), [
    ("repair_says_safe", "payment.toml", "tool/durable#1", "UNSAFE_RETRY_GUIDANCE"),
    ("no_request_checkpoint", "chat.toml", "model/chunk#1", "REQUEST_ENVELOPE_LOST"),
])  # fmt: skip
def test_a_variant_forked_leaves_what_it_leaves_exec_d(
    variant: str, scenario: str, at: str, code: str, tmp_path: Path
) -> None:
    # check_determinism reruns the case and its reference exec'd and compares
    # every log, the ledger, the trace and the verdict, normalised.
    path = str(ROOT / "scenarios" / scenario)
    target = script_target(VARIANTS / f"{variant}.py")
    fork = LabOptions(lab.make_target(target=target), tmp_path / "fork", 60.0, "fork")
    reference = run_reference(path, load_scenario(path), fork)
    assert reference.returncode == 0 and reference.ground_truth == "syscalls", reference.stderr
    # Its reference run was forked and traced too (strace attached, no interpreter start).
    traced = (tmp_path / "fork" / "reference" / scenario / "strace.txt").read_text()
    assert traced and "execve(" not in traced
    result = run_one(Case(path, at, "sigkill"), reference, fork)
    assert result.verdict == "fail" and code in result.codes, result
    execd = LabOptions(lab.make_target(target=target), tmp_path / "exec", 60.0, "exec")
    difference = check_determinism(Case(path, at, "sigkill"), reference, result, execd,
                                   workdir=tmp_path / "exec")  # fmt: skip
    assert difference is None, difference


def test_a_script_target_is_refused_when_the_script_is_missing(tmp_path: Path) -> None:
    with pytest.raises(LabUsageError, match="does not exist"):
        script_target(tmp_path / "nowhere.py")


def test_an_acp_variant_forked_is_caught_as_exec_d(tmp_path: Path) -> None:
    # Forked by the ACP fork server (the child runs the script), then exec'd:
    # the same verdict, codes and messages.
    path = str(ROOT / "scenarios" / "payment.toml")
    script = VARIANTS / "acp_cancel_drops_closing.py"
    found = {}
    for spawn, target in (("fork", script_target(script)), ("exec", [sys.executable, str(script)])):
        result = lab.run_single(path, "tool/durable#1", fault="acp-cancel", target=target,
                                workdir=tmp_path / spawn, spawn=spawn, drive="acp")  # fmt: skip
        found[spawn] = (result.verdict, sorted(result.codes),
                        sorted(v.message for v in result.violations))  # fmt: skip
    assert found["fork"] == found["exec"]
    assert found["fork"][0] == "fail" and "CANCEL_NOT_PERSISTED" in found["fork"][1]
