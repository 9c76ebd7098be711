# The file model of the system-call ground truth against Linux itself:
# Hypothesis draws sequences of file operations (O_APPEND, O_TRUNC, O_SYNC
# and O_DSYNC opens; write, pwrite, writev, pwritev, pwritev2 with
# RWF_APPEND; lseek; ftruncate, truncate, fallocate and hole punching; dup,
# dup2, fcntl(F_SETFL); close; fsync, fdatasync; rename, link, unlink;
# writes from a thread and from a forked child), tests/fixtures/fileops.py
# runs them for real on a scratch folder under strace, and the files the
# model rebuilds from its facts must equal the real files byte for byte.
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from faultlab.lab.faults.sqlitestates import replay
from faultlab.lab.process.syscalls import parse_strace, strace_path, strace_unusable, traced_argv

pytestmark = [
    pytest.mark.realprocess,
    pytest.mark.skipif(
        strace_path() is None or strace_unusable(strace_path() or "") is not None,
        reason="strace cannot trace here",
    ),
]

OPS = Path(__file__).resolve().parents[1] / "fixtures" / "fileops.py"
EXAMPLES = int(os.environ.get("FAULTLAB_FILE_MODEL_EXAMPLES", "40"))
NAMES = ("a", "b", "c")

slot = st.integers(0, 4)
blob = st.binary(min_size=1, max_size=24).map(bytes.hex)
offset = st.integers(0, 80)
operation = st.one_of(
    st.tuples(st.just("open"), st.sampled_from(NAMES),
              st.lists(st.sampled_from(["append", "trunc", "sync", "dsync", "creat"]),
                       unique=True)),
    st.tuples(st.just("write"), slot, blob),
    st.tuples(st.just("pwrite"), slot, blob, offset),
    st.tuples(st.just("writev"), slot, blob, blob),
    st.tuples(st.just("pwritev"), slot, blob, blob, offset),
    st.tuples(st.just("append2"), slot, blob),
    st.tuples(st.just("lseek"), slot, offset, st.sampled_from([os.SEEK_SET, os.SEEK_END])),
    st.tuples(st.just("ftruncate"), slot, offset),
    st.tuples(st.just("truncate"), st.sampled_from(NAMES), offset),
    st.tuples(st.just("fallocate"), slot, offset, st.integers(1, 64)),
    st.tuples(st.just("punch"), slot, offset, st.integers(1, 64)),
    st.tuples(st.just("dup"), slot),
    st.tuples(st.just("dup2"), slot, slot),
    st.tuples(st.just("setfl"), slot, st.integers(0, 1)),
    st.tuples(st.just("close"), slot),
    st.tuples(st.sampled_from(["fsync", "fdatasync"]), slot),
    st.tuples(st.sampled_from(["rename", "link"]), st.sampled_from(NAMES),
              st.sampled_from(NAMES)),
    st.tuples(st.just("unlink"), st.sampled_from(NAMES)),
    st.tuples(st.sampled_from(["thread", "fork"]), slot, blob),
)  # fmt: skip
programs = st.lists(operation, min_size=1, max_size=20).map(
    lambda ops: [("open", "a", ["creat"]), *ops]
)


def run_traced(ops: list[Any], scratch: Path) -> tuple[str, Path]:
    root = scratch / "root"
    root.mkdir()
    (scratch / "ops.json").write_text(json.dumps(ops))
    strace = strace_path()
    assert strace is not None
    argv = traced_argv([sys.executable, str(OPS), str(scratch / "ops.json"), str(root)],
                       scratch / "strace.txt", strace)  # fmt: skip
    subprocess.run(argv, check=True, timeout=60, capture_output=True)
    return (scratch / "strace.txt").read_text("ascii", errors="replace"), root


def modelled_files(text: str, root: Path) -> dict[str, bytes]:
    parsed = parse_strace(text, root, 0)
    assert parsed.unsupported == (), parsed.unsupported
    files = replay(parsed.facts, parsed.data).files
    return {os.path.basename(p): bytes(f.current) for p, f in files.items()}


def real_files(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in root.iterdir()}


@settings(max_examples=EXAMPLES, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
@given(programs)
def test_the_model_rebuilds_every_file_byte_for_byte(ops: list[Any]) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        text, root = run_traced(ops, Path(scratch))
        assert modelled_files(text, root) == real_files(root)


@pytest.mark.parametrize(
    "ops",
    [
        # Node's fs.writeSync(fd, text, position) on an 'a' descriptor: pwrite
        # at 0 on O_APPEND, which Linux appends at the end.
        [("open", "a", ["creat", "append"]), ("write", 0, "6869"), ("pwrite", 0, "6a6b", 0)],
        # A duplicated O_APPEND descriptor and a forked child share the description.
        [("open", "a", ["creat", "append"]), ("dup", 0), ("write", 1, "78"),
         ("fork", 0, "7979"), ("pwrite", 1, "7a", 0)],
        # A file kept open after its temporary name was linked and unlinked.
        [("open", "a", ["creat"]), ("write", 0, "31"), ("link", "a", "b"), ("unlink", "a"),
         ("write", 0, "32"), ("fsync", 0)],
        # Preallocated, then a hole punched in it.
        [("open", "a", ["creat"]), ("write", 0, "ff" * 20), ("fallocate", 0, 0, 40),
         ("punch", 0, 4, 8)],
    ],
    ids=["pwrite-on-append", "dup-and-fork", "write-after-unlink", "fallocate-punch"],
)  # fmt: skip
def test_shapes_other_runtimes_use(ops: list[Any], tmp_path: Path) -> None:
    text, root = run_traced(ops, tmp_path)
    assert modelled_files(text, root) == real_files(root)


def test_a_shared_writable_mmap_is_named_not_judged(tmp_path: Path) -> None:
    program = (
        "import mmap, os, sys\n"
        "fd = os.open(os.path.join(sys.argv[1], 'm'), os.O_RDWR | os.O_CREAT, 0o644)\n"
        "os.ftruncate(fd, 4096)\n"
        "with mmap.mmap(fd, 4096) as m: m[:2] = b'hi'\n"
    )
    root = tmp_path / "root"
    root.mkdir()
    strace = strace_path()
    assert strace is not None
    argv = traced_argv([sys.executable, "-c", program, str(root)], tmp_path / "s.txt", strace)
    subprocess.run(argv, check=True, timeout=60, capture_output=True)
    parsed = parse_strace((tmp_path / "s.txt").read_text("ascii", errors="replace"), root, 0)
    assert len(parsed.unsupported) == 1 and "mmap" in parsed.unsupported[0]
