# The fork server's options, refused with a clear error before any process
# starts: how many children to fork ahead and whether they warm up (lab
# client, LabOptions; the server's command line is
# tests/unit/forking/test_forking_arguments.py), and when the lab wants them warm.
from __future__ import annotations

from pathlib import Path

import pytest

from faultlab.lab.campaigns.pytest_glue import PluginOptions, _lab, pytest_workers
from faultlab.lab.errors import LabUsageError
from faultlab.lab.process.forkserver import ForkServer
from faultlab.lab.process.reference import LabOptions, usable_cpus
from faultlab.lab.process.target import reference_target


@pytest.mark.parametrize("ahead", [-1, True, 1.5, "2"])
def test_the_lab_refuses_a_bad_count_before_starting_a_server(ahead: object) -> None:
    with pytest.raises(ValueError, match="ahead must be an integer >= 0"):
        ForkServer(ahead=ahead)  # type: ignore[arg-type]


def test_the_lab_refuses_a_bad_warm_flag_before_starting_a_server() -> None:
    with pytest.raises(ValueError, match="warm must be True or False"):
        ForkServer(warm="no")  # type: ignore[arg-type]


@pytest.mark.parametrize("warm", [0, 1, "yes"])
def test_lab_options_refuse_a_bad_warm_flag(tmp_path: Path, warm: object) -> None:
    with pytest.raises(LabUsageError, match="fork_warm must be True, False or None"):
        LabOptions(reference_target(), tmp_path, fork_warm=warm)  # type: ignore[arg-type]


def test_children_warm_up_unless_the_jobs_outnumber_the_cpus(tmp_path: Path) -> None:
    options = LabOptions(reference_target(), tmp_path)
    cpus = usable_cpus()
    assert options.for_jobs(1).fork_warm is True
    assert options.for_jobs(cpus).fork_warm is True
    assert options.for_jobs(cpus + 1).fork_warm is False
    assert options.for_jobs(cpus + 3).fork_warm is False
    for chosen in (True, False):  # a choice made in the options stands
        explicit = LabOptions(reference_target(), tmp_path, fork_warm=chosen)
        assert explicit.for_jobs(1).fork_warm is chosen
        assert explicit.for_jobs(cpus).fork_warm is chosen


@pytest.mark.parametrize("ahead", [-1, True, 1.5])
def test_lab_options_refuse_a_bad_count(tmp_path: Path, ahead: object) -> None:
    with pytest.raises(LabUsageError, match="fork_ahead must be an integer >= 0"):
        LabOptions(reference_target(), tmp_path, fork_ahead=ahead)  # type: ignore[arg-type]


def test_the_plugin_counts_its_xdist_workers_as_jobs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plugin = PluginOptions(True, None, ("sigkill",), None, 60.0, None, tmp_path)
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)
    assert pytest_workers() == 1
    for told, workers in (("3", 3), ("0", 1), ("many", 1)):
        monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", told)
        assert pytest_workers() == workers
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", str(usable_cpus() + 1))
    assert _lab(plugin, tmp_path).fork_warm is False
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", str(usable_cpus()))
    assert _lab(plugin, tmp_path).fork_warm is True
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT")
    assert _lab(plugin, tmp_path).fork_warm is True
