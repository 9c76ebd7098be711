# Hostile shards for `faultlab report merge` (issue 31, item 1), through the
# real CLI: two real shards of one exploration (built once per test run),
# then one thing in them broken the way an attacker or an unlucky copy
# would.  A record or file of the wrong shape is exit 2 with one line naming
# the shard, the file, the line and the field; a link, a FIFO or a device
# inside a shard is refused before it is opened (never followed: the file
# it points at is never copied); an `artifacts.dir` outside its shard is
# refused.  Nothing is written into the report folder when the merge is
# refused, no process is left, and never a traceback.
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.conftest import REPO, once_per_run

pytestmark = pytest.mark.realprocess

PAYMENT = str(REPO / "scenarios" / "payment.toml")
SECRET = "faultlab-hostile-secret-4f1d"  # the content of a file outside every shard


def _build(where: Path) -> list[str]:
    """Shards 1/2 and 2/2 of a failing exploration (turn-only), with failures."""
    env = {**os.environ, "FAULTLAB_GROUND_TRUTH": "facts", "PYTHONPATH": str(REPO)}
    shards = []
    for index in (1, 2):
        out = where / f"s{index}"
        subprocess.run(
            [sys.executable, "-m", "faultlab", "explore", PAYMENT, "--faults", "sigkill",
             "--policy", "turn-only", "--shard", f"{index}/2", "--report-dir", str(out), "-q"],
            env=env, capture_output=True, timeout=300, check=False,
        )  # fmt: skip
        shards.append(str((out / "latest").resolve()))
    return shards


@pytest.fixture
def shards(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> tuple[Path, Path]:
    """Fresh copies of the two shards in this test's folder."""
    built = once_per_run(tmp_path_factory, "hostile-shards", _build)
    copies = []
    for index, source in enumerate(built, start=1):
        copy = tmp_path / f"s{index}"
        shutil.copytree(source, copy, symlinks=True)
        copies.append(copy)
    return copies[0], copies[1]


def _records(shard: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in (shard / "cases.jsonl").read_bytes().splitlines()]


def _write_records(shard: Path, records: list[Any]) -> None:
    (shard / "cases.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))


def _failure(shard: Path) -> Path:
    return sorted((shard / "failures").iterdir())[0]


def _edit_record(change: Callable[[dict[str, Any]], Any]) -> Callable[[Path, Path], None]:
    def edit(first: Path, _second: Path) -> None:
        records: list[Any] = _records(first)
        records[2] = change(records[2])
        _write_records(first, records)

    return edit


def _without(key: str) -> Callable[[dict[str, Any]], Any]:
    return lambda record: {k: v for k, v in record.items() if k != key}


def _with(key: str, value: Any) -> Callable[[dict[str, Any]], Any]:
    return lambda record: {**record, key: value}


def _json_file(name: str, value: Any) -> Callable[[Path, Path], None]:
    def edit(_first: Path, second: Path) -> None:
        (second / name).write_bytes(orjson.dumps(value))

    return edit


def _run_field(key: str, value: Any) -> Callable[[Path, Path], None]:
    def edit(first: Path, _second: Path) -> None:
        info = orjson.loads((first / "run.json").read_bytes())
        (first / "run.json").write_bytes(orjson.dumps({**info, key: value}))

    return edit


def _secret_file(tmp: Path) -> Path:
    secret = tmp / "outside" / "shadow"
    secret.parent.mkdir(exist_ok=True)
    secret.write_text(SECRET)
    return secret


# name -> (how the shards are broken, what the one error line must hold)
BROKEN: dict[str, tuple[Callable[[Path, Path], None], tuple[str, ...]]] = {
    "record-without-id": (_edit_record(_without("id")), ("s1", "cases.jsonl:3", "'id'", "missing")),
    "record-is-a-list": (_edit_record(lambda r: [1, 2]), ("s1", "cases.jsonl:3", "JSON object")),
    "seconds-abc": (
        _edit_record(_with("seconds", "abc")), ("cases.jsonl:3", "'seconds'", "number"),
    ),
    "codes-5": (_edit_record(_with("codes", 5)), ("cases.jsonl:3", "'codes'", "list")),
    "violation-without-code": (
        _edit_record(_with("violations", [{"message": "m"}])), ("cases.jsonl:3", "'violations'"),
    ),
    "verdict-unknown": (_edit_record(_with("verdict", "meh")), ("cases.jsonl:3", "'verdict'")),
    "record-not-json": (
        lambda first, _s: (first / "cases.jsonl").write_bytes(b'{"id": \n'),
        ("s1", "cases.jsonl:1", "not JSON"),
    ),
    "summary-is-a-list": (_json_file("summary.json", [1]), ("s2", "summary.json", "JSON object")),
    "summary-passed-text": (
        _json_file("summary.json", {"runId": "r", "passed": "yes"}), ("summary.json", "'passed'"),
    ),
    "run-is-a-string": (_json_file("run.json", "x"), ("s2", "run.json", "JSON object")),
    "run-target-a-string": (
        _run_field("target", "python3 t.py"), ("s1", "run.json", "'target'", "list"),
    ),
    "run-timeout-nan": (_run_field("timeout", "nan"), ("run.json", "'timeout'")),
    "artifacts-dir-absolute": (
        lambda first, second: _edit_record(_with("artifacts", {"dir": "/etc"}))(first, second),
        ("cases.jsonl:3", "'artifacts'", "relative path inside"),
    ),
    "artifacts-dir-dotdot": (
        _edit_record(_with("artifacts", {"dir": "failures/../../outside"})),
        ("cases.jsonl:3", "'artifacts'", "relative path inside"),
    ),
    "fifo-in-failures": (
        lambda first, _s: os.mkfifo(_failure(first) / "trace.fifo"), ("s1", "FIFO", "trace.fifo"),
    ),
    "symlink-to-a-secret": (
        lambda first, _s: (_failure(first) / "stolen").symlink_to(_secret_file(first.parent)),
        ("s1", "stolen", "symbolic link"),
    ),
    "symlink-to-dev-zero": (
        lambda first, _s: (first / "failures" / "zero").symlink_to("/dev/zero"),
        ("s1", "failures/zero", "symbolic link"),
    ),
    "failures-is-a-symlink": (
        lambda first, _s: (shutil.rmtree(first / "failures"),
                           (first / "failures").symlink_to(_secret_file(first.parent).parent)),
        ("s1", "failures", "symbolic link"),
    ),
    "latest-points-outside": (
        lambda first, _s: (first.parent / "holder").mkdir() or (
            first.parent / "holder" / "latest").symlink_to("../s1"),
        ("latest", "outside"),
    ),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_broken_shard_is_refused_in_one_line(
    name: str, shards: tuple[Path, Path], faultlab_cli: Callable[..., Any], tmp_path: Path,
) -> None:  # fmt: skip
    first, second = shards
    breaks, needles = BROKEN[name]
    breaks(first, second)
    given = tmp_path / "holder" if name == "latest-points-outside" else first
    out = tmp_path / "merged"
    done = faultlab_cli("report", "merge", str(given), str(second), "--report-dir", str(out),
                        timeout=60)  # fmt: skip
    assert done.code == 2, (done.code, done.stderr[-2000:])
    line = done.one_line_error()
    for needle in needles:
        assert needle in line, (needle, line)
    # Nothing of the merge was kept, nothing read through a link, nothing left.
    assert not out.exists() or [p.name for p in out.iterdir()] == [], list(out.iterdir())
    assert done.left == ()


def test_a_big_artifact_is_bounded(
    shards: tuple[Path, Path], faultlab_cli: Callable[..., Any], tmp_path: Path
) -> None:
    # A sparse file over the artifact limit (256 MiB): refused by its size
    # before a byte is copied (under the corpus's file-size bound too).
    first, second = shards
    with open(_failure(first) / "huge.jsonl", "wb") as huge:
        os.truncate(huge.fileno(), (256 << 20) + 1)
    out = tmp_path / "merged"
    done = faultlab_cli("report", "merge", str(first), str(second), "--report-dir", str(out))
    assert done.code == 2, done.stderr[-2000:]
    line = done.one_line_error()
    assert "huge.jsonl" in line and "268435457 bytes" in line and "limit" in line
    assert not out.exists() or list(out.iterdir()) == []


def test_good_shards_merge_and_the_page_pulls_in_nothing_from_outside(
    shards: tuple[Path, Path], faultlab_cli: Callable[..., Any], tmp_path: Path
) -> None:
    first, second = shards
    out = tmp_path / "merged"
    done = faultlab_cli("report", "merge", str(first), str(second), "--report-dir", str(out))
    assert done.code == 1, done.stderr[-2000:]  # turn-only: violations, merged
    merged = (out / "latest").resolve()
    cases = _records(merged)
    assert len(cases) == len(_records(first)) + len(_records(second))
    failing = [c for c in cases if c["verdict"] == "fail"]
    assert failing and all((merged / c["artifacts"]["dir"]).is_dir() for c in failing)
    assert SECRET not in (merged / "report.html").read_text()
    # The page is built from the report alone: an artifacts.dir naming a folder
    # outside (as a hand-edited report might) is not followed there.
    from faultlab.lab.report.html import html_report

    secret = _secret_file(tmp_path)
    (secret.parent / "trace.jsonl").write_text('{"boundary":"' + SECRET + '","n":1}\n')
    cases[1] = {**failing[0], "artifacts": {"dir": str(secret.parent)}}
    _write_records(merged, cases)
    assert SECRET not in html_report(merged)
