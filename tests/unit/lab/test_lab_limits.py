# The one check of `jobs` and of the timeout (faultlab/lab/errors.py): what
# each accepts and refuses, and that every entry point that takes a timeout
# (the drives' registry, the black-box options, fuzz, the selftest and its
# zoo, the pytest plugin, the Hypothesis strategies, the CLI) refuses the
# same values with the same message, and every one that takes jobs too.
from __future__ import annotations

import math
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis.errors import InvalidArgument

from faultlab import lab
from faultlab.cli import main
from faultlab.lab.agents.launch import agent_launcher
from faultlab.lab.blackbox.drive import BlackboxOptions
from faultlab.lab.campaigns.fuzz import FuzzSettings, fuzz_campaign
from faultlab.lab.campaigns.pytest_glue import plugin_options
from faultlab.lab.campaigns.selftest import run_selftest
from faultlab.lab.campaigns.strategies import cases
from faultlab.lab.campaigns.zoo import load_zoo
from faultlab.lab.drives import make_drive
from faultlab.lab.errors import LabUsageError, check_jobs, check_timeout

ROOT = Path(__file__).resolve().parents[3]
PAYMENT = str(ROOT / "scenarios" / "payment.toml")
TIMEOUT = "timeout must be a number of seconds from 0.1 to 86400, not "
JOBS = "jobs must be at least 1, not "


@pytest.mark.parametrize("good", [0.1, 1, 60.0, 86_400])
def test_a_timeout_from_a_tenth_of_a_second_to_a_day_is_taken_as_a_float(good: float) -> None:
    assert check_timeout(good) == float(good)
    assert isinstance(check_timeout(good), float)


@pytest.mark.parametrize("bad", [0, -1.5, 0.05, 86_400.5, math.inf, math.nan, True, "60", None])
def test_any_other_timeout_is_refused_naming_the_range_and_the_value(bad: object) -> None:
    with pytest.raises(LabUsageError) as caught:
        check_timeout(bad)
    assert str(caught.value) == f"{TIMEOUT}{bad!r}"


@pytest.mark.parametrize("bad", [0, -3, True, 1.0, "2"])
def test_jobs_are_a_whole_number_from_1(bad: object) -> None:
    assert check_jobs(4) == 4
    with pytest.raises(LabUsageError) as caught:
        check_jobs(bad)
    assert str(caught.value) == f"{JOBS}{bad!r}"


def _zoo(tmp_path: Path, timeout: float) -> None:
    (tmp_path / "v.py").write_text("")
    path = tmp_path / "zoo.toml"
    path.write_text(f"""format = 1
[[variant]]
name = "v"
bug = "b"
expect = ["UNSAFE_RETRY_GUIDANCE"]
scenarios = ["payment.toml"]
quick = [{{ scenario = "payment.toml", at = "tool/durable", fault = "sigkill" }}]
timeout = {timeout}
""")
    load_zoo(path)


def test_every_entry_point_refuses_a_zero_timeout_with_the_one_message(tmp_path: Path) -> None:
    refusals = [
        lambda: make_drive("classic", workdir=tmp_path, timeout=0),
        lambda: make_drive("agent", workdir=tmp_path, timeout=0, agent="reference"),
        lambda: BlackboxOptions(agent_launcher("reference"), tmp_path, timeout=0),
        lambda: fuzz_campaign(workdir=tmp_path, timeout=0),
        lambda: plugin_options(enabled=True, policy=None, faults="sigkill", target=None,
                               timeout="0", shard=None, basetemp=tmp_path),
        lambda: _zoo(tmp_path, 0),
    ]  # fmt: skip
    for refuse in refusals:
        with pytest.raises(ValueError, match=TIMEOUT):  # LabUsageError is a ValueError
            refuse()
    zoo = load_zoo(ROOT / "tests" / "variants" / "zoo.toml")
    with pytest.raises(LabUsageError, match=TIMEOUT):
        run_selftest(zoo, workdir=tmp_path, timeout=0)
    with pytest.raises(InvalidArgument, match=TIMEOUT):
        cases(timeout=0)
    shown = CliRunner().invoke(main, ["boundaries", "--timeout", "0", PAYMENT])
    assert shown.exit_code == 2 and f"{TIMEOUT}0.0" in shown.output


def test_every_entry_point_refuses_zero_jobs_with_the_one_message(tmp_path: Path) -> None:
    zoo = load_zoo(ROOT / "tests" / "variants" / "zoo.toml")
    for refuse in (lambda: FuzzSettings(jobs=0), lambda: run_selftest(zoo, workdir=tmp_path,
                                                                       jobs=0)):  # fmt: skip
        with pytest.raises(LabUsageError, match=f"^{JOBS}0$"):
            refuse()
    with pytest.raises(LabUsageError, match=f"^{JOBS}0$"):
        lab.explore_paths([PAYMENT], jobs=0, workdir=tmp_path)


@pytest.mark.parametrize("bad", [0, 101, True, 2.0, "3"])
def test_fuzz_refuses_a_bad_number_of_examples_per_scenario(bad: object) -> None:
    with pytest.raises(LabUsageError, match=r"^per_scenario must be 1 to 100 examples, not "):
        FuzzSettings(per_scenario=bad)  # type: ignore[arg-type]
