# Hostile scenario inputs through the real CLI (`boundaries`, `explore`): files
# that are not files (FIFOs, devices, symlink loops, directories), files too
# big or nested too deep, text that would expand to gigabytes, encodings, and
# the malformed scenarios that already behaved.  Each must end in exit 2 with
# one line naming the file (and the line and field where there is one), fast,
# in bounded memory, leaving no process behind (issue 22).
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hostile_helpers import BASE, TOOL_BASE, Setup, deep_arguments, sparse, write

pytestmark = pytest.mark.realprocess

# name -> (command, how to make the input in tmp_path, the path given, what the
# one error line must hold).
CASES: dict[str, tuple[str, Setup, str, tuple[str, ...]]] = {}


def case(
    name: str, given: str, *needles: str, command: str = "boundaries"
) -> Callable[[Setup], Setup]:
    def register(make: Setup) -> Setup:
        CASES[name] = (command, make, given, needles)
        return make

    return register


# --- the rows of issue 22 -----------------------------------------------------------------

case("fifo", "s.toml", "s.toml: is a FIFO")(lambda tmp: os.mkfifo(tmp / "s.toml"))
case("fifo-explore", "s.toml", "s.toml: is a FIFO", command="explore")(
    lambda tmp: os.mkfifo(tmp / "s.toml")
)
case("dev-zero", "/dev/zero", "/dev/zero: is a character device")(lambda tmp: None)
case("dev-null", "/dev/null", "/dev/null: is a character device")(lambda tmp: None)
case("nested-330", "s.toml", "s.toml:2:", "nested more than 32 levels")(
    write("s.toml", 'name = "d"\nx = ' + "[" * 330 + "]" * 330 + "\n")
)
case("nested-1000", "s.toml", "s.toml:10:", "nested more than 32 levels")(
    write("s.toml", TOOL_BASE.format(arguments="[" * 1000 + "]" * 1000))
)
case("nested-280-arguments", "s.toml", "s.toml:", "nested more than 32 levels")(
    write("s.toml", TOOL_BASE.format(arguments=deep_arguments(280)))
)
case("nested-40-dotted-keys", "s.toml", "s.toml:9:", "steps[0].x.a.a.a", "nested more than 32")(
    write("s.toml", BASE + "x" + ".a" * 40 + " = 1\n")
)
case("repeat-10GB", "s.toml", "s.toml:", "steps[0].repeat", "text x repeat")(
    write("s.toml", BASE.replace('text = "hello"', f'text = "{"x" * 100_000}"\nrepeat = 100000'))
)
case("symlink-loop", "s.toml", "s.toml: is a symlink loop")(
    lambda tmp: (tmp / "s.toml").symlink_to("s.toml")
)
case("symlink-loop-explore", "s.toml", "s.toml: is a symlink loop", command="explore")(
    lambda tmp: (tmp / "s.toml").symlink_to("s.toml")
)
case("symlink-loop-pair", "a.toml", "a.toml: is a symlink loop")(
    lambda tmp: ((tmp / "a.toml").symlink_to("b.toml"), (tmp / "b.toml").symlink_to("a.toml"))
)


# --- what already behaved -----------------------------------------------------------------

case("missing", "nope.toml", "nope.toml: no such scenario")(lambda tmp: None)
case("dangling-symlink", "s.toml", "s.toml: no such scenario", "dangling symlink")(
    lambda tmp: (tmp / "s.toml").symlink_to("gone.toml")
)
case("oversized-sparse", "s.toml", "s.toml: is 5242880 bytes", "limit")(
    sparse("s.toml", 5 << 20)
)
case("utf16", "s.toml", "s.toml: is UTF-16")(write("s.toml", BASE.encode("utf-16")))
case("not-utf8", "s.toml", "s.toml:2: not UTF-8")(write("s.toml", b'format = 1\nname = "\xff"\n'))
case("empty-file", "s.toml", "s.toml: the file is empty")(write("s.toml", ""))
case("only-comments", "s.toml", "s.toml: the file is empty")(write("s.toml", "\n\n   \n"))
case("binary", "s.toml", "s.toml", "invalid TOML")(write("s.toml", bytes(range(1, 128)) * 4))
case("nul-bytes", "s.toml", "s.toml:", "invalid TOML")(write("s.toml", b"name = \"a\x00b\"\n"))
case("invalid-toml", "s.toml", "s.toml:2:", "invalid TOML")(
    write("s.toml", 'name = "x"\n[[turns\n')
)
case("unknown-key", "s.toml", "s.toml:8:", "turns[0].steps[0].txt", "unknown key")(
    write("s.toml", BASE.replace("text =", "txt ="))
)
case("wrong-type", "s.toml", "s.toml:2:", "name: expected string")(
    write("s.toml", BASE.replace('name = "h"', "name = 7"))
)
case("repeat-out-of-range", "s.toml", "s.toml:", "repeat: must be between 1 and 100000")(
    write("s.toml", BASE.replace('text = "hello"', 'text = "x"\nrepeat = 100001'))
)
case("repeat-negative", "s.toml", "s.toml:", "repeat: must be between")(
    write("s.toml", BASE.replace('text = "hello"', 'text = "x"\nrepeat = -1'))
)
case("huge-integer", "s.toml", "s.toml:", "latency_ms: must be between")(
    write("s.toml", BASE + "[tools.t]\nlatency_ms = 99999999999999999999\n")
)
case("total-text", "s.toml", "s.toml:", "more than 10000000 characters in all")(
    write("s.toml", BASE + "".join(
        f'[[turns]]\nuser = "u"\n[[turns.steps]]\ntext = "{"y" * 100}"\nrepeat = 10000\n'
        for _ in range(11)
    ))
)
case("nan-argument", "s.toml", "s.toml:", "cannot be sent as JSON")(
    write("s.toml", TOOL_BASE.format(arguments="{ x = nan }"))
)
case("date-argument", "s.toml", "s.toml:", "a date cannot be sent as JSON")(
    write("s.toml", TOOL_BASE.format(arguments="{ x = 1979-05-27 }"))
)
case("unknown-tool", "s.toml", "s.toml:", "unknown tool 'nope'")(
    write("s.toml", TOOL_BASE.format(arguments="{}").replace('tool = "t"', 'tool = "nope"'))
)
case("superscript-occurrence", "s.toml", "s.toml:3:", "boundaries[0]", "whole number >= 1")(
    write("s.toml", BASE.replace('name = "h"\n', 'name = "h"\nboundaries = ["model/chunk#²"]\n'))
)
case("huge-occurrence", "s.toml", "s.toml:3:", "at most 9 digits")(
    write("s.toml", BASE.replace('name = "h"\n', f'name = "h"\nboundaries = ["x#{"9" * 5000}"]\n')
          .replace("x#", "model/chunk#"))
)
case("format-2", "s.toml", "s.toml:1:", "unsupported format 2")(
    write("s.toml", BASE.replace("format = 1", "format = 2"))
)
case("no-turns", "s.toml", "s.toml:", "turns: required key is missing")(
    write("s.toml", 'format = 1\nname = "h"\n')
)
case("directory-for-boundaries", "d", "d: is a directory, not a scenario file")(
    lambda tmp: (tmp / "d").mkdir()
)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_hostile_scenario_is_one_line_and_exit_2(
    name: str, faultlab_cli: Callable[..., Any], tmp_path: Path
) -> None:
    command, make, given, needles = CASES[name]
    make(tmp_path)
    extra = ("--no-report", "--faults", "sigkill") if command == "explore" else ()
    out = faultlab_cli(command, given, "--timeout", "20", *extra)
    assert out.code == 2, (out.code, out.stderr[-2000:])
    line = out.one_line_error()
    assert line.startswith("faultlab: error: "), line
    for needle in needles:
        assert needle in line, line
    assert len(line) < 400, line
    assert out.left == (), out.left


# --- scenario directories given to explore ------------------------------------------------

DIRS: dict[str, tuple[Setup | None, tuple[str, ...]]] = {
    "directory-is-a-loop": (None, ("loop: is a symlink loop",)),
    "empty-directory": (lambda d: None, ("d: no scenario files (*.toml) in this directory",)),
    "loop-inside": (
        lambda d: ((d / "x.toml").symlink_to("y.toml"), (d / "y.toml").symlink_to("x.toml")),
        ("d/x.toml: is a symlink loop",),
    ),
    "fifo-inside": (lambda d: os.mkfifo(d / "a.toml"), ("d/a.toml: is a FIFO",)),
    "directory-inside": (lambda d: (d / "a.toml").mkdir(), ("d/a.toml: is a directory",)),
    "dangling-inside": (
        lambda d: (d / "a.toml").symlink_to("/nonexistent/x.toml"), ("d/a.toml: no such",)
    ),
    "bad-one-inside": (write("a.toml", "name = [\n"), ("d/a.toml:", "invalid TOML")),
}


@pytest.mark.parametrize("name", sorted(DIRS))
def test_a_hostile_scenario_directory_is_one_line_and_exit_2(
    name: str, faultlab_cli: Callable[..., Any], tmp_path: Path
) -> None:
    make, needles = DIRS[name]
    given = "d"
    if make is None:
        (tmp_path / "loop").symlink_to("loop")
        given = "loop"
    else:
        (tmp_path / "d").mkdir()
        if name != "empty-directory":
            (tmp_path / "d" / "ok.toml").write_text(BASE)
        make(tmp_path / "d")
    out = faultlab_cli("explore", given, "--no-report", "--faults", "sigkill")
    assert out.code == 2, (out.code, out.stderr[-2000:])
    line = out.one_line_error()
    for needle in needles:
        assert needle in line, line
    assert ": : " not in line
    assert out.left == ()


def test_a_scenario_with_a_utf8_byte_order_mark_is_accepted(
    faultlab_cli: Callable[..., Any], tmp_path: Path
) -> None:
    (tmp_path / "bom.toml").write_bytes(b"\xef\xbb\xbf" + BASE.encode())
    out = faultlab_cli("boundaries", "bom.toml", "--json")
    assert out.code == 0, out.stderr
    assert "Invalid statement" not in out.stderr
    assert "turn/durable#1" in out.stdout
    assert out.left == ()
