"""Scenario files: the chunking of streamed text, alone and as a step applies it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scenario_texts import variant

from faultlab.scenario import parse_scenario
from faultlab.scenario.chunking import chunk_text

# --- chunking ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "options", "expected"),
    [
        ("a b  c", {}, ("a ", "b  ", "c")),
        ("  a b\n", {}, ("  a ", "b\n")),
        ("   ", {}, ("   ",)),
        ("", {}, ()),
        ("", {"chunks": 3}, ()),
        ("", {"chunk_size": 3}, ()),
        ("abcdefg", {"chunks": 3}, ("abc", "de", "fg")),
        ("abc", {"chunks": 10}, ("a", "b", "c")),
        ("abcdefg", {"chunk_size": 3}, ("abc", "def", "g")),
    ],
)
def test_chunking(text: str, options: dict[str, int], expected: tuple[str, ...]) -> None:
    assert chunk_text(text, **options) == expected


def test_step_chunks_repeat_the_text_then_split() -> None:
    text = variant('text = "Done."', 'text = "ab"\n  repeat = 3\n  chunks = 4')
    assert parse_scenario(text).turns[0].steps[1].chunks == ("ab", "ab", "a", "b")
    text = variant('text = "Done."', 'text = "ab "\n  repeat = 2\n  chunk_size = 4')
    assert parse_scenario(text).turns[0].steps[1].chunks == ("ab a", "b ")


@given(
    text=st.text(alphabet=st.sampled_from("ab \n\t\u00e9")),
    count=st.integers(1, 20),
    mode=st.sampled_from(["words", "chunks", "chunk_size"]),
)
def test_chunks_join_to_the_text(text: str, count: int, mode: str) -> None:
    options = {} if mode == "words" else {mode: count}
    chunks = chunk_text(text, **options)
    assert "".join(chunks) == text
    assert all(chunks)
    if mode == "chunks":
        assert len(chunks) == min(count, len(text))
        assert max(map(len, chunks), default=0) - min(map(len, chunks), default=0) <= 1
    if mode == "chunk_size":
        assert all(len(chunk) == count for chunk in chunks[:-1])
