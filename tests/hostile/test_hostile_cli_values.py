# Hostile option values through the real CLI: numbers that are not finite,
# out of range, too long, in another script's digits, or not numbers at all.
# Every one is refused before anything runs, with exit 2 and one line naming
# the option (issue 22; the bounds are in docs/cli.md, "Limits").
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.realprocess

TINY = str(Path(__file__).resolve().parents[1] / "scenarios" / "tiny.toml")

# (arguments, what the one line must hold)
CASES: list[tuple[tuple[str, ...], str]] = [
    # the rows of issue 22: --timeout nan, inf, 1e10, 1e308
    *[(("boundaries", TINY, "--timeout", v), "--timeout") for v in ("nan", "inf", "1e10", "1e308")],
    (("explore", TINY, "--timeout", "-inf"), "not a finite number"),
    (("run", TINY, "--at", "turn/durable", "--timeout", "NaN"), "not a finite number"),
    (("selftest", "--timeout", "infinity"), "not a finite number"),
    # a range is the lab's one check of every timeout (faultlab.lab.check_timeout)
    (("fuzz", "--timeout", "1e400"), "timeout must be a number of seconds from 0.1 to 86400"),
    # and what already behaved, or slipped through as a traceback
    (("boundaries", TINY, "--timeout", "0"), "from 0.1 to 86400, not 0.0"),
    (("boundaries", TINY, "--timeout", "-5"), "from 0.1 to 86400, not -5.0"),
    (("boundaries", TINY, "--timeout", "abc"), "'abc' is not a number"),
    (("boundaries", TINY, "--timeout", "0x10"), "'0x10' is not a number"),
    (("boundaries", TINY, "--timeout", "1_0"), "'1_0' is not a number"),
    (("boundaries", TINY, "--timeout", "٣"), "is not a number"),
    (("boundaries", TINY, "--timeout", ""), "is not a number"),
    (("explore", TINY, "--jobs", "0"), "--jobs"),
    (("explore", TINY, "--jobs", "-1"), "out of range (from 1 to 256)"),
    (("explore", TINY, "--jobs", "1e3"), "is not a whole number"),
    (("explore", TINY, "--jobs", "2.5"), "is not a whole number"),
    (("explore", TINY, "--jobs", "9" * 40), "is not a whole number"),
    (("explore", TINY, "--jobs", "100000"), "out of range"),
    (("explore", TINY, "--jobs", "²"), "is not a whole number"),
    (("explore", TINY, "--max-double-cases", "-1"), "--max-double-cases"),
    (("explore", TINY, "--max-double-cases", "99999999999"), "out of range"),
    (("explore", TINY, "--repeats", "0"), "--repeats"),
    (("explore", TINY, "--shard", "1/²"), "must look like K/N"),
    (("explore", TINY, "--shard", "0/0"), "K must be between 1 and N"),
    (("explore", TINY, "--shard", f"1/{'9' * 5000}"), "must look like K/N"),
    (("run", TINY, "--at", "turn/durable#²"), "whole number >= 1"),
    (("run", TINY, "--at", "turn/durable#0"), "whole number >= 1"),
    (("run", TINY, "--at", f"turn/durable#{'9' * 5000}"), "at most 9 digits"),
    (("run", TINY, "--at", "turn/durable#-1"), "whole number >= 1"),
    (("fuzz", "--examples", "0"), "--examples"),
    (("fuzz", "--examples", "nan"), "is not a whole number"),
    (("fuzz", "--seed", "-1"), "--seed"),
    (("fuzz", "--seed", "1" * 30), "is not a whole number"),
    (("fuzz", "--stream-size", "0"), "--stream-size"),
    (("selftest", "--jobs", "inf"), "is not a whole number"),
]


@pytest.mark.parametrize(("args", "needle"), CASES, ids=lambda v: " ".join(v)[-40:] if
                         isinstance(v, tuple) else None)  # fmt: skip
def test_a_bad_option_value_is_one_line_and_exit_2(
    args: tuple[str, ...], needle: str, faultlab_cli: Callable[..., Any]
) -> None:
    out = faultlab_cli(*args, timeout=30)
    assert out.code == 2, (out.code, out.stderr[-2000:])
    line = out.one_line_error()
    assert line.startswith("faultlab: error: "), line
    assert needle in line, line
    assert len(line) < 300, line
    assert out.stdout == ""
    assert out.left == ()
