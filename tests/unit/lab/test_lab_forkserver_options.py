# The fork server's options, refused with a clear error before any process
# starts: how many children to fork ahead (server command line, lab client,
# LabOptions).
from __future__ import annotations

from pathlib import Path

import pytest

from faultlab.lab.errors import LabUsageError
from faultlab.lab.forkserver import ForkServer
from faultlab.lab.runner import LabOptions
from faultlab.lab.target import reference_target
from faultlab.runtime.forkserver import AHEAD, server_arguments


def test_server_arguments_default_to_forking_ahead() -> None:
    assert server_arguments(["7"]) == (7, AHEAD)
    assert server_arguments(["7", "0"]) == (7, 0)
    assert server_arguments(["7", "3"]) == (7, 3)


@pytest.mark.parametrize("argv", [["7", "-1"], ["7", "two"], ["x"]])
def test_bad_server_arguments_are_refused(argv: list[str]) -> None:
    with pytest.raises(ValueError):
        server_arguments(argv)


@pytest.mark.parametrize("ahead", [-1, True, 1.5, "2"])
def test_the_lab_refuses_a_bad_count_before_starting_a_server(ahead: object) -> None:
    with pytest.raises(ValueError, match="ahead must be an integer >= 0"):
        ForkServer(ahead=ahead)  # type: ignore[arg-type]


@pytest.mark.parametrize("ahead", [-1, True, 1.5])
def test_lab_options_refuse_a_bad_count(tmp_path: Path, ahead: object) -> None:
    with pytest.raises(LabUsageError, match="fork_ahead must be an integer >= 0"):
        LabOptions(reference_target(), tmp_path, fork_ahead=ahead)  # type: ignore[arg-type]
