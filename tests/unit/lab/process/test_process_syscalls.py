# The strace parser on hand-written strace output (the integration tests run
# the real strace): paths and data in -xx hex, calls split across threads
# (unfinished/resumed), O_APPEND vs positioned writes, lseek, writev,
# pwrite64, link/rename/unlink, directory fsyncs, failed calls, and the
# probe's reports recovered from the report pipe with their positions.
from __future__ import annotations

import orjson

from faultlab.lab.process.syscalls import parse_strace, traced_argv

ROOT = "/w/session"


def h(text: str | bytes) -> str:
    data = text.encode() if isinstance(text, str) else text
    return "".join(f"\\x{b:02x}" for b in data)


def fd(number: int, path: str) -> str:
    return f"{number}<{h(path)}>"


def report(message: dict[str, object]) -> bytes:
    return orjson.dumps(message) + b"\n"


def lines(*calls: str) -> str:
    return "\n".join(f"{100 + (i % 2)}  {c}" for i, c in enumerate(calls)) + "\n"


PIPE = f"9<{h('pipe:[777]')}>"
HEAD = h("head\n")
ABC = h("abc\n")
LOG = f"{ROOT}/session.jsonl"
TMP = f"{ROOT}/.tmp"


def test_the_atomic_create_then_appends_become_facts_between_reports() -> None:
    first = report({"boundary": "turn/started", "n": 1})
    second = report({"boundary": "flush/written", "n": 1})
    text = lines(
        f'openat(AT_FDCWD<{h("/w")}>, "{h(TMP)}", O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0644) '
        f"= {fd(5, TMP)}",
        f'write({fd(5, TMP)}, "{HEAD}", 5) = 5',
        f"fsync({fd(5, TMP)}) = 0",
        f'link("{h(TMP)}", "{h(LOG)}") = 0',
        f'unlink("{h(TMP)}") = 0',
        f'openat(AT_FDCWD<{h("/w")}>, "{h(ROOT)}", O_RDONLY|O_DIRECTORY) = {fd(6, ROOT)}',
        f"fsync({fd(6, ROOT)}) = 0",
        f'write({PIPE}, "{h(first)}", {len(first)}) = {len(first)}',
        f'openat(AT_FDCWD<{h("/w")}>, "{h(LOG)}", O_WRONLY|O_APPEND) = {fd(7, LOG)}',
        f'write({fd(7, LOG)}, "{ABC}", 4 <unfinished ...>',
        f'write({fd(2, "/w/run.stderr")}, "{h("noise")}", 5) = 5',
        "<... write resumed>) = 4",
        f'write({PIPE}, "{h(second[:7])}", 7) = 7',
        f'write({PIPE}, "{h(second[7:])}", {len(second) - 7}) = {len(second) - 7}',
        f"fsync({fd(7, LOG)}) = 0",
        f"fsync({fd(8, '/elsewhere/file')}) = 0",
        f'write({fd(7, LOG)}, "{h("x")}", 1) = -1 ENOSPC (No space left on device)',
    )
    parsed = parse_strace(text, ROOT, 777)
    assert parsed.reports == ({"boundary": "turn/started", "n": 1},
                              {"boundary": "flush/written", "n": 1})  # fmt: skip
    # (each write's bytes are kept beside the facts: `w` indexes them)
    assert parsed.data == (b"head\n", b"abc\n")
    assert [f["w"] for f in parsed.facts if f["fact"] == "write"] == [0, 1]
    facts = [{k: v for k, v in f.items() if k not in ("via", "w")} for f in parsed.facts]
    assert facts == [
        {"fact": "create", "file": TMP, "size": 0, "after": 0},
        {"fact": "write", "file": TMP, "offset": 0, "bytes": 5, "after": 0},
        {"fact": "fsync", "file": TMP, "size": 5, "after": 0},
        {"fact": "link", "file": LOG, "source": TMP, "after": 0},
        {"fact": "unlink", "file": TMP, "after": 0},
        {"fact": "dirsync", "dir": ROOT, "after": 0},
        # O_APPEND: at the file's end (5), not at the descriptor's 0
        {"fact": "write", "file": LOG, "offset": 5, "bytes": 4, "after": 1},
        {"fact": "fsync", "file": LOG, "size": 9, "after": 2},
    ]
    assert all(f["via"] == "strace" for f in parsed.facts)


def test_positioned_writes_lseek_writev_truncate_and_rename() -> None:
    db = f"{ROOT}/db"
    text = lines(
        f'openat(AT_FDCWD, "{h(db)}", O_RDWR|O_CREAT, 0644) = {fd(4, db)}',
        f'pwrite64({fd(4, db)}, "{h("x" * 8)}", 8, 4096) = 8',
        f"lseek({fd(4, db)}, 10, SEEK_SET) = 10",
        f'writev({fd(4, db)}, [{{iov_base="{h("ab")}", iov_len=2}}, '
        f'{{iov_base="{h("cd")}", iov_len=2}}], 2) = 4',
        f"ftruncate({fd(4, db)}, 100) = 0",
        f'rename("{h(db)}", "{h(db + "2")}") = 0',
        f"fdatasync({fd(4, db + '2')}) = 0",
    )
    parsed = parse_strace(text, ROOT, 1)
    # pwrite64's bytes, and writev's iovecs joined, in call order
    assert parsed.data == (b"x" * 8, b"abcd")
    facts = [
        {k: v for k, v in f.items() if k not in ("via", "after", "w")} for f in parsed.facts
    ]
    assert facts == [
        {"fact": "create", "file": db, "size": 0},
        {"fact": "write", "file": db, "offset": 4096, "bytes": 8},
        {"fact": "write", "file": db, "offset": 10, "bytes": 4},
        {"fact": "truncate", "file": db, "size": 100},
        {"fact": "rename", "file": db + "2", "source": db},
        {"fact": "fsync", "file": db + "2", "size": 100},
    ]


def test_the_strace_command_follows_forks_and_prints_hex() -> None:
    argv = traced_argv(["python", "-m", "x"], __import__("pathlib").Path("/o"), "/usr/bin/strace")
    assert argv[0] == "/usr/bin/strace" and argv[-4:] == ["--", "python", "-m", "x"]
    assert {"-f", "-y", "-xx", "--seccomp-bpf"} <= set(argv)
    assert argv[argv.index("-o") + 1] == "/o"


def test_a_write_longer_than_the_dumped_string_keeps_no_bytes() -> None:
    # strace prints at most -s bytes: a longer write keeps its length only,
    # and `w` None says its bytes are unknown (the SQLite states then refuse).
    db = f"{ROOT}/db"
    text = lines(
        f'openat(AT_FDCWD, "{h(db)}", O_RDWR|O_CREAT, 0644) = {fd(4, db)}',
        f'pwrite64({fd(4, db)}, "{h("abc")}"..., 4096, 0) = 4096',
        f'pwrite64({fd(4, db)}, "{h("ok")}", 2, 8192) = 2',
    )
    parsed = parse_strace(text, ROOT, 1)
    assert [(f["offset"], f["bytes"], f["w"]) for f in parsed.facts if f["fact"] == "write"] == [
        (0, 4096, None),
        (8192, 2, 0),
    ]
    assert parsed.data == (b"ok",)
