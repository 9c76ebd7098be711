# Generated hostile inputs (Hypothesis): random bytes and mutations of valid
# scenarios and logs (JSONL and SQLite) into the scenario loader, `inspect`
# and `boundaries`.  Whatever the input: a Scenario or a one-line
# ScenarioError from the loader; exit 0 or 1 from `inspect` on a regular file;
# exit 2 with one line from `boundaries` on a scenario that does not load;
# never another exception, never exit 3.  In-process (click's CliRunner and
# the loader itself), so a few hundred examples take seconds; the subprocess
# corpus beside this file covers hangs, memory and leftovers.
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from hostile_helpers import BASE, TOOL_BASE, jsonl_log, sqlite_log
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from faultlab.cli import main
from faultlab.scenario import Scenario, ScenarioError, load_scenario, parse_scenario

REPO = Path(__file__).resolve().parents[2]
SEEDS = [BASE, TOOL_BASE.format(arguments="{ a = [1, { b = 'x' }] }"),
         (REPO / "scenarios" / "deploy-careful.toml").read_text(),
         (REPO / "scenarios" / "nested-parallel.toml").read_text()]  # fmt: skip
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TOML_BITS = st.sampled_from([*"[]{}=\"'#.,\n \t\\", "[[", "]]", '"""', "'''", "\ufeff",
                             "1e999", "nan", "-0", "1979-05-27", "true", "repeat = 100000"])


@st.composite
def mutated(draw: st.DrawFn, seed: str | bytes) -> bytes:
    """`seed` with a few spans deleted, duplicated or overwritten."""
    data = bytearray(seed.encode() if isinstance(seed, str) else seed)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        end = min(len(data), at + draw(st.integers(0, 40)))
        how = draw(st.sampled_from(["delete", "duplicate", "insert", "flip"]))
        if how == "delete":
            del data[at:end]
        elif how == "duplicate":
            data[at:at] = data[at:end] * draw(st.integers(1, 50))
        elif how == "insert":
            data[at:at] = draw(TOML_BITS).encode() * draw(st.integers(1, 40))
        elif at < len(data):
            data[at] ^= draw(st.integers(1, 255))
    return bytes(data)


def _load(data: bytes) -> Scenario | ScenarioError:
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "s.toml"
        path.write_bytes(data)
        try:
            return load_scenario(path)
        except ScenarioError as exc:
            return exc


def _check_loader(data: bytes) -> None:
    found = _load(data)
    if isinstance(found, ScenarioError):
        assert "\n" not in str(found), str(found)
        assert str(found).startswith(found.path)
    text = data.decode("utf-8", "replace")
    try:
        parse_scenario(text)
    except ScenarioError as exc:
        assert "\n" not in str(exc)


@FAST
@given(st.binary(max_size=600))
def test_random_bytes_into_the_scenario_loader(data: bytes) -> None:
    _check_loader(data)


@FAST
@given(st.sampled_from(SEEDS).flatmap(mutated))
def test_mutated_scenarios_into_the_scenario_loader(data: bytes) -> None:
    _check_loader(data)


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=True)
    assert isinstance(result.exception, SystemExit | None), repr(result.exception)
    assert "Traceback" not in result.stderr, result.stderr
    return result.exit_code, result.stderr


@settings(FAST, max_examples=30)
@given(st.one_of(st.binary(max_size=400), st.sampled_from(SEEDS[:2]).flatmap(mutated)))
def test_what_does_not_load_is_refused_by_boundaries_in_one_line(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "s.toml"
        path.write_bytes(data)
        if isinstance(_load(data), Scenario):
            return  # a valid scenario would run the runtime: the subprocess corpus does that
        code, stderr = _invoke("boundaries", str(path))
    assert code == 2, stderr
    assert stderr.count("\n") == 1 and stderr.startswith("faultlab: error: "), stderr


def _inspect(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "log"
        path.write_bytes(data)
        code, _stderr = _invoke("inspect", str(path), "--json")
    assert code in (0, 1)


@FAST
@given(st.one_of(st.binary(max_size=800), st.just(jsonl_log()).flatmap(mutated)))
def test_random_and_mutated_jsonl_logs_into_inspect(data: bytes) -> None:
    _inspect(data)


@pytest.fixture(scope="module")
def sqlite_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return sqlite_log(tmp_path_factory.mktemp("sqlite"))


@st.composite
def damaged(draw: st.DrawFn, data: bytes) -> bytes:
    """A database with bytes flipped anywhere (its header too), cut, or extended."""
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(out) - 1))
        out[at] ^= draw(st.integers(1, 255))
    how = draw(st.sampled_from(["keep", "cut", "extend"]))
    if how == "cut":
        del out[draw(st.integers(0, len(out))):]
    elif how == "extend":
        out += draw(st.binary(min_size=1, max_size=5000))
    return bytes(out)


@settings(FAST, max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                       HealthCheck.too_slow])  # fmt: skip
@given(data=st.data())
def test_damaged_sqlite_logs_into_inspect(sqlite_bytes: bytes, data: st.DataObject) -> None:
    _inspect(data.draw(damaged(sqlite_bytes)))
