# Hypothesis properties of the lab's own log reader: it never raises on any
# bytes, a valid log truncated at any byte reads as a prefix of its events, a
# bit flip keeps the lines before it, and a damaged line before a turn/end is
# always reported.
from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from jsonl_logs import HEADER, codes, line

from faultlab.lab.read.jsonl import parse_log
from faultlab.lab.read.view import (
    BAD_HEADER,
    CORRUPT_COMMITTED_LOG,
    EVENT_TYPES,
    SEQ_DUPLICATE,
    SEQ_GAP,
    LogView,
)

# --- properties ----------------------------------------------------------------------

TYPES = sorted(EVENT_TYPES)
texts = st.text(alphabet=st.characters(codec="utf-8"), max_size=12) | st.sampled_from(
    ["turn/end", '"turn/end"', "\n", "\\", '{"type":"turn/end"}', "é\u2028"]
)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=4,
)
event_specs = st.lists(
    st.tuples(
        st.sampled_from(TYPES),
        st.floats(min_value=0, max_value=2e9, allow_nan=False),
        st.dictionaries(texts, json_values, max_size=2),
    ),
    max_size=8,
)


def encode(specs: list[tuple[str, float, dict[str, Any]]]) -> tuple[bytes, list[int]]:
    """A valid log and the end offset of each event line."""
    data = bytearray(HEADER)
    ends = []
    for seq, (kind, time, payload) in enumerate(specs):
        data += line(seq, kind, payload, time)
        ends.append(len(data))
    return bytes(data), ends


def check_invariants(view: LogView, data: bytes) -> None:
    assert view.size == len(data)
    if BAD_HEADER in codes(view):
        assert codes(view) == [BAD_HEADER]
        assert view.events == () and view.valid_size == 0 and view.torn_bytes == 0
        return
    assert 0 < view.valid_size <= view.size
    assert view.valid_size + view.torn_bytes == view.size
    assert data[view.valid_size - 1 : view.valid_size] == b"\n"
    previous = 1
    for event in view.events:
        assert event.line > previous
        previous = event.line
        assert event.offset < view.valid_size
        assert data[event.offset - 1 : event.offset] == b"\n"
        assert event.type in EVENT_TYPES
    for problem in view.problems:
        assert problem.code in {CORRUPT_COMMITTED_LOG, SEQ_GAP, SEQ_DUPLICATE}
        assert problem.offset < view.valid_size


@settings(max_examples=300)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    check_invariants(parse_log(data, "s"), data)


@settings(max_examples=300)
@given(st.lists(st.binary(max_size=40) | st.sampled_from([line(0, "turn/end")[:-1]]), max_size=8))
def test_arbitrary_lines_after_a_good_header_never_raise(chunks: list[bytes]) -> None:
    data = HEADER + b"\n".join(chunks)
    check_invariants(parse_log(data, "s"), data)


@settings(max_examples=150)
@given(event_specs, st.data())
def test_a_valid_log_cut_at_any_byte_reads_as_a_prefix(
    specs: list[tuple[str, float, dict[str, Any]]], draw: st.DataObject
) -> None:
    data, ends = encode(specs)
    whole = parse_log(data, "s")
    assert whole.problems == () and len(whole.events) == len(specs)
    cut = draw.draw(st.integers(0, len(data)))
    view = parse_log(data[:cut], "s")
    check_invariants(view, data[:cut])
    if cut < len(HEADER):
        assert codes(view) == [BAD_HEADER]
        return
    kept = sum(1 for end in ends if end <= cut)
    assert view.problems == ()
    assert view.events == whole.events[:kept]
    assert view.valid_size == (ends[kept - 1] if kept else len(HEADER))
    assert view.torn_bytes == cut - view.valid_size


@settings(max_examples=150)
@given(event_specs.filter(bool), st.data())
def test_a_bit_flip_never_raises_and_keeps_the_lines_before_it(
    specs: list[tuple[str, float, dict[str, Any]]], draw: st.DataObject
) -> None:
    data, ends = encode(specs)
    whole = parse_log(data, "s")
    where = draw.draw(st.integers(0, len(data) - 1))
    bit = draw.draw(st.integers(0, 7))
    flipped = bytearray(data)
    flipped[where] ^= 1 << bit
    view = parse_log(bytes(flipped), "s")
    check_invariants(view, bytes(flipped))
    if where >= len(HEADER):
        before = sum(1 for end in ends if end <= where)
        assert view.events[:before] == whole.events[:before]


@settings(max_examples=100)
@given(event_specs.filter(lambda specs: len(specs) >= 2), st.data())
def test_a_damaged_line_before_a_turn_end_is_always_reported(
    specs: list[tuple[str, float, dict[str, Any]]], draw: st.DataObject
) -> None:
    specs = [*specs, ("turn/end", 1.0, {})]
    data, ends = encode(specs)
    index = draw.draw(st.integers(0, len(specs) - 2))
    start = ends[index - 1] if index else len(HEADER)
    damaged = data[:start] + b"#" + data[start:]  # '#' can start no JSON value
    view = parse_log(damaged, "s")
    assert codes(view) == [CORRUPT_COMMITTED_LOG]
    assert view.problems[0].offset == start
    assert view.problems[0].line == index + 2
    assert [event.seq for event in view.events] == [i for i in range(len(specs)) if i != index]
