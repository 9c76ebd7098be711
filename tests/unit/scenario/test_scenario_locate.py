"""Scenario files: the line locator behind every error's line number."""

from __future__ import annotations

from scenario_texts import BASE, error_of, line_of, variant

from faultlab.scenario.locate import locate

# --- the line locator -------------------------------------------------------


def test_locator_counts_array_headers_per_parent() -> None:
    text = BASE + '[[turns]]\nuser = "again"\n  [[turns.steps]]\n  text = "a"\n'
    text += "  [[turns.steps]]\n  text = 5\n"
    error = error_of(text)
    assert (error.field_path, error.line) == ("turns[1].steps[1].text", line_of(text, "text = 5"))
    assert locate(text, ("turns", 1)) == line_of(text, "[[turns]]", 1)
    assert locate(text, ("turns", 0, "steps", 1)) == line_of(text, "[[turns.steps]]", 1)
    assert locate(text, ("turns", 1, "steps", 0, "text")) == line_of(text, 'text = "a"')


def test_locator_dotted_keys_and_tables_defined_by_them() -> None:
    text = variant("[tools.status]\nread_only = true", '[tools]\nstatus.read_only = "no"')
    error = error_of(text)
    assert (error.field_path, error.line) == ("tools.status.read_only", line_of(text, "status."))
    assert locate(text, ("tools", "status")) == line_of(text, "status.")


def test_locator_skips_multiline_values() -> None:
    text = variant(
        'text = "Deploying."\n  tool_calls = [{ tool = "deploy" }]',
        'text = """\nlatency_ms = 1\n[[turns]]\n"""\n'
        "  tool_calls = [\n"
        '    { tool = "deploy", arguments = { m = [\n      [1, 2],\n    ] } },\n'
        '    { tool = "nope" },\n  ]\n  repeat = "2"',
    )
    error = error_of(text)  # the multi-line string and array do not derail the scan
    assert (error.field_path, error.line) == ("turns[0].steps[0].repeat", line_of(text, "repeat"))
    # A field inside a multi-line array is found at the line of its key.
    assert locate(text, ("turns", 0, "steps", 0, "tool_calls", 1, "tool")) == line_of(
        text, "tool_calls = ["
    )


def test_locator_gives_no_line_rather_than_a_wrong_one() -> None:
    text = variant("[tools.deploy]", '[tools."de\\u0070loy"]')  # an escaped key it cannot read
    error = error_of(variant('effect = "ledger"', "latency_ms = -1", text))
    assert (error.field_path, error.line) == ("tools.deploy.latency_ms", None)
    assert locate(BASE, ("nope",)) is None
    assert locate(BASE, ()) is None
