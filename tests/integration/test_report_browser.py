# report.html in a real browser: Debian's `chromium`, headless (`.ci/run`
# installs it).  A small failing exploration's page is opened; the DOM after
# its script ran must hold the matrix cell of a failing case linking to that
# case's failure section, the timeline's marked kill point, and the marker
# the script sets last (so it ran to the end); chromium must log no console
# message (errors included).  A screenshot goes to reports/browser/ for
# people.  Skips where chromium is missing.
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from faultlab.cli import main

ROOT = Path(__file__).resolve().parents[2]
TINY_TOOL = str(ROOT / "tests" / "scenarios" / "tiny-tool.toml")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [
    pytest.mark.realprocess,
    pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (.ci/run installs it)"),
]
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--enable-logging=stderr", "--v=0", "--no-first-run", "--disable-extensions"]  # fmt: skip


def chromium(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={home / 'profile'}", *args],
        capture_output=True, text=True, timeout=120, env={"HOME": str(home), "PATH": "/usr/bin"},
    )  # fmt: skip


def test_a_failing_report_renders_with_its_links_and_kill_point(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    argv = ["explore", TINY_TOOL, "--policy", "turn-only", "--faults", "sigkill", "-q",
            "-k", "tool or turn/started", "--report-dir", str(reports)]  # fmt: skip
    assert CliRunner().invoke(main, argv).exit_code == 1
    page = (reports / "latest" / "report.html").resolve()
    dumped = chromium("--dump-dom", page.as_uri(), home=tmp_path)
    dom = dumped.stdout
    assert 'data-ready="1"' in dom, dumped.stderr[-2000:]  # the script ran to its end
    console = [line for line in dumped.stderr.splitlines() if ":CONSOLE" in line]
    assert console == []
    link = re.search(r"<td class=\"v-fail\"><a href=\"#([^\"]+)\"[^>]*>fail</a>", dom)
    assert link is not None, "no failing matrix cell links to a failure"
    anchor = link.group(1)
    section = dom[dom.index(f'id="{anchor}"'):]
    section = section[:section.find("</section>")]
    assert 'data-kill="1"' in section and "sigkill here" in section
    assert "tiny-tool.toml::tool/effect#1[sigkill]" in dom
    shots = ROOT / "reports" / "browser"
    shots.mkdir(parents=True, exist_ok=True)
    shot = shots / "failing-report.png"
    taken = chromium(f"--screenshot={shot}", "--window-size=1400,1800", page.as_uri(),
                     home=tmp_path)  # fmt: skip
    assert shot.is_file() and shot.stat().st_size > 10_000, taken.stderr[-2000:]
