# `-k EXPR`, `--lf` and `--maxfail` as a Selection (faultlab.lab.campaigns.select):
# pytest's keyword expressions over case ids, parsed without eval.
from __future__ import annotations

import pytest

from faultlab.lab.campaigns.select import Selection, keyword_matcher
from faultlab.lab.errors import LabUsageError

IDS = [
    "payment.toml::model/chunk#1[sigkill]",
    "payment.toml::tool/effect#1[sigkill]",
    "payment.toml::tool/effect#1[crash-in-repair]",
    "chat.toml::flush/written#1[power-loss]",
    "chat.toml::coverage[reference]",
]


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("effect", [1, 2]),
        ("EFFECT", [1, 2]),
        ("effect and sigkill", [1]),
        ("effect and not sigkill", [2]),
        ("chat or model", [0, 3, 4]),
        ("not (chat or effect)", [0]),
        ("(chat and power) or (payment and repair)", [2, 3]),
        ("not not chat", [3, 4]),
        ("tool/effect#1[sigkill]", [1]),
        ("xyz or qqq and chat", []),
        ("chat or payment and model", [0, 3, 4]),  # and binds tighter than or
    ],
)
def test_keyword_expressions_match_as_pytest_does(expression: str, expected: list[int]) -> None:
    match = keyword_matcher(expression)
    assert [i for i, case_id in enumerate(IDS) if match(case_id)] == expected


@pytest.mark.parametrize(
    ("expression", "why"),
    [
        ("", "empty expression"),
        ("chat and", "ends where a word"),
        ("(chat", "not closed"),
        ("chat)", r"unexpected '\)'"),
        ("and chat", "unexpected 'and'"),
        ("chat payment", "unexpected 'payment'"),
        ("not", "ends where a word"),
    ],
)
def test_a_malformed_expression_is_one_clear_error(expression: str, why: str) -> None:
    with pytest.raises(LabUsageError, match=why):
        keyword_matcher(expression)


def test_no_python_is_evaluated() -> None:
    match = keyword_matcher("__import__")
    assert not match("payment.toml::x")  # a word like any other, matched as a substring
    with pytest.raises(LabUsageError, match="unexpected"):
        keyword_matcher("__import__('os').system('true')")


def test_selection_combines_ids_and_keyword() -> None:
    chosen = Selection(keyword="sigkill", ids=frozenset(IDS[1:3]))
    assert chosen.take(IDS) == [1]
    assert Selection().take(IDS) == list(range(len(IDS)))
    with pytest.raises(LabUsageError, match="maxfail must be at least 1"):
        Selection(maxfail=0)
    with pytest.raises(LabUsageError, match="-k"):
        Selection(keyword="(")


def test_a_sample_keeps_a_few_cases_per_scenario_and_fault_and_every_coverage_case() -> None:
    ids = ["a.toml::coverage[reference]"]
    ids += [f"a.toml::tool/effect#{i}[sigkill]" for i in range(1, 9)]
    ids += [f"a.toml::tool/effect#{i}[power-loss]" for i in range(1, 3)]
    ids += ["a.toml::x#1+y#2[double-sigkill]", "a.toml::x#2+y#1[double-sigkill]",
            "a.toml::x#3+y#1[double-sigkill]"]  # fmt: skip
    ids += [f"b.toml::model/chunk#{i}[sigkill]" for i in range(1, 6)]
    chosen = [ids[i] for i in Selection(sample=2, seed=5).take(ids)]
    assert chosen[0] == "a.toml::coverage[reference]"
    per_group: dict[tuple[str, str], int] = {}
    for case_id in chosen[1:]:
        key = (case_id.split("::")[0], case_id[case_id.rfind("[") :])
        per_group[key] = per_group.get(key, 0) + 1
    assert per_group == {("a.toml", "[sigkill]"): 2, ("a.toml", "[power-loss]"): 2,
                         ("a.toml", "[double-sigkill]"): 2, ("b.toml", "[sigkill]"): 2}
    assert chosen == sorted(chosen, key=ids.index)  # in case order
    assert Selection(sample=2, seed=5).take(ids) == Selection(sample=2, seed=5).take(ids)
    draws = {tuple(Selection(sample=2, seed=seed).take(ids)) for seed in range(8)}
    assert len(draws) > 1  # another seed reaches other occurrences
    only = Selection(keyword="b.toml", sample=1).take(ids)  # after -k
    assert len(only) == 1 and ids[only[0]].startswith("b.toml")
    for bad in (0, -1, True):
        with pytest.raises(LabUsageError, match="sample must be at least 1"):
            Selection(sample=bad)
