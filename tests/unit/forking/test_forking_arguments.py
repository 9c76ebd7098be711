# Every fork server's command line (faultlab/forking/serve.py,
# `server_arguments`): FD [AHEAD] [cold] [flat] [-- EXTRA...], the flags
# in any order, the module's own
# arguments after `--`; anything else refused before a server starts.
from __future__ import annotations

import pytest

from faultlab.forking.serve import AHEAD, COLD, FLAT, ServerArguments, server_arguments


def test_server_arguments_default_to_forking_ahead_warm_in_namespaces() -> None:
    assert server_arguments(["7"]) == ServerArguments(7, AHEAD, True, True, ())
    assert server_arguments(["7", "0"]) == ServerArguments(7, 0, True, True, ())
    assert server_arguments(["7", "3"]) == ServerArguments(7, 3, True, True, ())
    assert server_arguments(["7", COLD]) == ServerArguments(7, AHEAD, False, True, ())
    assert server_arguments(["7", "3", COLD]) == ServerArguments(7, 3, False, True, ())
    assert server_arguments(["7", FLAT]) == ServerArguments(7, AHEAD, True, False, ())
    assert server_arguments(["7", "0", COLD, FLAT]) == ServerArguments(7, 0, False, False, ())


def test_the_modules_own_arguments_follow_a_double_dash() -> None:
    parsed = server_arguments(["9", "0", "--", "child.module", "app:build"])
    assert parsed == ServerArguments(9, 0, True, True, ("child.module", "app:build"))
    # What follows `--` is never read as a flag.
    assert server_arguments(["9", "--", COLD, "3"]).extra == (COLD, "3")


@pytest.mark.parametrize(
    "argv",
    [[], ["7", "-1"], ["7", "two"], ["x"], ["7", "1", "2"], ["7", "warm"], ["--", "a"]],
)
def test_bad_server_arguments_are_refused(argv: list[str]) -> None:
    with pytest.raises(ValueError):
        server_arguments(argv)
