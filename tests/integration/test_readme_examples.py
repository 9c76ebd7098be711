# The README's first example block ("Using faultlab"), run top to bottom in
# a scratch copy of the bundled scenarios, as a new user would type it: each
# command must do what its comment says (the failing exploration fails, the
# replay finds the same verdict, the inspected log and the ledger show the
# harm).  One command is made smaller here (SMALLER): the SQLite run of every
# bundled case under every fault takes minutes.
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.realprocess

SMALLER = {
    "faultlab explore --backend sqlite --faults all":
        "faultlab explore scenarios/payment.toml --backend sqlite --faults sigkill,power-loss",
}  # fmt: skip


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("## Using faultlab", 1)[1].split("```sh\n", 1)[1].split("\n```", 1)[0]
    joined = block.replace("\\\n", " ")
    # A comment starts at a '#' after white space (as in sh); `effect#1` is a word.
    commands = [re.sub(r"\s+#\s.*$", "", line).strip() for line in joined.splitlines()]
    return [re.sub(r"\s+", " ", c) for c in commands if c]


def test_the_readme_examples_work_in_order(tmp_path: Path) -> None:
    commands = readme_commands()
    assert commands[0].startswith("faultlab explore scenarios/payment.toml --policy turn-only")
    assert any(c.startswith("faultlab replay") for c in commands)
    shutil.copytree(ROOT / "scenarios", tmp_path / "scenarios")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    outcomes: list[tuple[str, int, str]] = []
    for command in commands:
        command = SMALLER.get(command, command)
        words = shlex.split(command)
        if words[0] == "cat":
            text = (tmp_path / words[1]).read_text(encoding="utf-8")
            outcomes.append((command, 0, text))
            continue
        assert words[0] == "faultlab", command
        done = subprocess.run([sys.executable, "-m", "faultlab", *words[1:]], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
        outcomes.append((command, done.returncode, done.stderr))
        assert done.returncode in (0, 1), f"{command}: exit {done.returncode}\n{done.stderr}"
    first = outcomes[0]
    assert first[1] == 1 and "SIDE_EFFECT_DUPLICATED" in first[2]
    code, out = next((c, o) for cmd, c, o in outcomes if cmd.startswith("faultlab replay"))
    assert code == 1 and "same verdict" in out
    code, out = next((c, o) for cmd, c, o in outcomes if cmd.startswith("faultlab inspect"))
    assert code == 0 and "0 event(s)" in out  # nothing of the charged turn survived
    _, _, ledger = next(o for o in outcomes if o[0].startswith("cat "))
    assert ledger.count('"tool":"charge_card"') == 2
    lf = next(o for o in outcomes if "--lf" in o[0])
    assert lf[1] == 1 and "--lf: rerunning 1 failing case(s)" in lf[2]
    assert outcomes[-1][1] == 0, outcomes[-1]  # the SQLite backend keeps every guarantee
