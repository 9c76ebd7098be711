# Misbehaving protocol targets (small scripts under targets/) driven through
# the real CLI: a target that daemonizes a grandchild in each of the ways real
# programs do leaves nothing running after `explore`, after `run`, and after
# the lab itself is interrupted or killed; a target's broken probe report is
# an `error` case naming the report (exit 1, never a traceback); a helper
# holding the probe pipe is named as such; a child's huge output is kept as
# head and tail; a target gone before the lab's reply reaches it (it died of
# the SIGTERM the lab sent while it was parked) does not crash the lab.  The
# marker the `faultlab_cli` fixture sets is inherited by every daemon, so
# whatever escaped is found.
from __future__ import annotations

import shlex
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

pytestmark = pytest.mark.realprocess

HERE = Path(__file__).resolve().parent
TINY = str(HERE.parents[0] / "scenarios" / "tiny.toml")
FACTS = {"FAULTLAB_GROUND_TRUTH": "facts"}  # no strace: faster, and the plain exec path


def _target(name: str, *args: str) -> str:
    return shlex.join([sys.executable, str(HERE / "targets" / name), *args])


@pytest.mark.parametrize("mode", ["all", "immune"])
def test_a_daemonizing_target_leaves_nothing_after_explore(
    faultlab_cli: Callable[..., object], mode: str
) -> None:
    # One shard: the coverage check and one crash case; every child leaves a
    # daemon of each kind ("all"), or one immune to SIGTERM and SIGHUP under
    # the strace'd reference run (the wrapper path).
    env = {} if mode == "immune" else FACTS
    target = _target("daemonizing.py", mode, faultlab_cli.marker)  # type: ignore[attr-defined]
    done = faultlab_cli("explore", TINY, "--faults", "sigkill", "--shard", "1/12", "--no-report",
                        "--target", target, env=env)  # fmt: skip
    assert done.code == 0, done.stderr  # type: ignore[attr-defined]
    assert done.left == (), done.left  # type: ignore[attr-defined]


def test_a_daemonizing_target_leaves_nothing_after_run(faultlab_cli: Callable[..., object]) -> None:
    target = _target("daemonizing.py", "all", faultlab_cli.marker)  # type: ignore[attr-defined]
    done = faultlab_cli("run", TINY, "--at", "request/durable#1", "--target", target,
                        env=FACTS)  # fmt: skip
    assert done.code == 0, done.stderr  # type: ignore[attr-defined]
    assert done.left == (), done.left  # type: ignore[attr-defined]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_a_daemonizing_target_leaves_nothing_when_the_lab_is_stopped(
    faultlab_started: Callable[..., object], signum: int, tmp_path: Path
) -> None:
    lab = faultlab_started(  # type: ignore[operator]
        "explore", TINY, "--faults", "sigkill", "--no-report", "--target",
        _target("daemonizing.py", "all", faultlab_started.marker),  # type: ignore[attr-defined]
        env={"FAULTLAB_SCRATCH": str(tmp_path), **FACTS},
    )  # fmt: skip
    lab.wait_for("exploring")
    time.sleep(1.5)  # into the cases: daemons of several children are alive now
    lab.process.send_signal(signum)
    done = lab.finish()
    assert done.code == (-signal.SIGKILL if signum == signal.SIGKILL else 130), done.stderr
    assert done.left == (), done.left


@pytest.mark.parametrize("mode", ["no-n", "not-json", "types", "unknown", "huge"])
def test_a_broken_probe_report_is_an_error_case(
    faultlab_cli: Callable[..., object], mode: str
) -> None:
    done = faultlab_cli("explore", TINY, "--faults", "sigkill", "--no-report", "--target",
                        _target("badreport.py", mode), env=FACTS)  # fmt: skip
    assert done.code == 1, done.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in done.stderr  # type: ignore[attr-defined]
    assert "BAD_PROBE_REPORT" in done.stderr  # type: ignore[attr-defined]


def test_a_helper_holding_the_probe_pipe_is_named(faultlab_cli: Callable[..., object]) -> None:
    done = faultlab_cli("explore", TINY, "--faults", "sigkill", "--shard", "1/6", "--no-report",
                        "--target", _target("daemonizing.py", "pipe", faultlab_cli.marker),
                        env=FACTS)  # type: ignore[attr-defined]
    assert done.code == 1, done.stderr  # type: ignore[attr-defined]
    assert "a descendant still holds its probe pipe open" in done.stderr  # type: ignore[attr-defined]
    assert "no boundary reached and no exit" not in done.stderr  # type: ignore[attr-defined]
    assert done.left == (), done.left  # type: ignore[attr-defined]


def test_a_childs_huge_output_is_kept_as_head_and_tail(tmp_path: Path) -> None:
    # The lab's child runner directly: 5 MB on stdout, then a normal exit.
    from faultlab.lab.process.spawn import OUTPUT_HEAD, OUTPUT_TAIL, Child

    writes = "import os\nfor _ in range(80): os.write(1, b'y' * 65535 + b'\\n')\n"
    child = Child([sys.executable, "-c", writes], stderr_path=tmp_path / "out.txt")
    with child:
        assert child.run_until_parked_or_exit(60) is None
        status = child.wait(60)
    assert status.returncode == 0
    kept = (tmp_path / "out.txt").read_bytes()
    assert len(kept) < OUTPUT_HEAD + OUTPUT_TAIL + 200
    assert b"byte(s) of output dropped here]" in kept
    assert kept.startswith(b"y" * 1000) and kept.endswith(b"y\n")
    assert len(status.stderr) < OUTPUT_HEAD + OUTPUT_TAIL + 200


def test_a_reply_to_a_target_that_is_already_gone_is_not_an_error(tmp_path: Path) -> None:
    # A target parks and is gone before the lab answers, as one without a
    # SIGTERM handler is after the `sigterm` fault's signal: its end of the
    # reply pipe is closed, so the lab's "continue" meets EPIPE (here the
    # target closes that end itself, so the timing is certain).  The lab
    # judges what the child left; it must not die of BrokenPipeError.
    from faultlab.lab.process.spawn import Child

    parks_and_dies = (
        "import os\n"
        "report, reply = map(int, os.environ['FAULTLAB_PROBE_FDS'].split(','))\n"
        "os.close(reply)\n"
        "os.write(report, b'{\"boundary\":\"turn/started\",\"n\":1,\"parked\":true}\\n')\n"
        "import time; time.sleep(0.5)\n"
    )
    child = Child([sys.executable, "-c", parks_and_dies], stderr_path=tmp_path / "out.txt",
                  armed="turn/started#1")  # fmt: skip
    with child:
        parked = child.run_until_parked_or_exit(60)
        assert parked is not None and parked.get("parked") is True
        child.reply("continue")  # its reply pipe has no reader any more
        status = child.wait(60)
    assert status.returncode == 0


def test_a_fault_asked_for_where_it_cannot_apply_is_a_usage_error(
    faultlab_cli: Callable[..., object],
) -> None:
    done = faultlab_cli("run", TINY, "--at", "model/chunk#1", "--fault", "cancel-in-checkpoint")
    assert done.code == 2  # type: ignore[attr-defined]
    line = done.one_line_error()  # type: ignore[attr-defined]
    assert "cancel-in-checkpoint" in line and "tool/logged" in line


@pytest.mark.parametrize("where", ["empty", "under-a-file", "unwritable"])
def test_a_bad_report_dir_is_refused_before_the_first_case(
    faultlab_cli: Callable[..., object], where: str, tmp_path: Path
) -> None:
    (tmp_path / "file").write_text("x")
    report_dir = {"empty": "", "under-a-file": str(tmp_path / "file" / "reports"),
                  "unwritable": "/proc/faultlab-reports"}[where]  # fmt: skip
    done = faultlab_cli("explore", TINY, "--faults", "sigkill", "--report-dir", report_dir)
    assert done.code == 2, done.stderr  # type: ignore[attr-defined]
    line = done.one_line_error()  # type: ignore[attr-defined]
    assert "--report-dir" in line
    assert not (tmp_path / "latest").exists()
