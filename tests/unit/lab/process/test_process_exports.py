# The lab packages whose names are imported on first use (process/exports.py):
# every exported name is the object its submodule defines, an unknown one is
# an AttributeError, and the MCP tool server's imports, in a fresh
# interpreter, leave the fork servers, the reference run and the model
# server unimported (what the laziness is for).
from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

PACKAGES = ("faultlab.lab.process", "faultlab.lab.servers")


@pytest.mark.parametrize("package", PACKAGES)
def test_every_exported_name_is_its_submodules(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        value = getattr(module, name)
        home = getattr(value, "__module__", None)
        if isinstance(home, str) and home.startswith(package + "."):
            assert getattr(importlib.import_module(home), name) is value, name
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        module.nothing_here  # noqa: B018


def test_a_submodule_is_still_imported_from_the_package() -> None:
    from faultlab.lab.process import drift, reference

    assert reference.__name__ == "faultlab.lab.process.reference"
    assert drift.__name__ == "faultlab.lab.process.drift"  # the module, not its function


@pytest.mark.realprocess
def test_the_tool_server_does_not_import_the_lab_machinery() -> None:
    code = ("import sys, faultlab.lab.servers.mcptools; "
            "print(' '.join(m for m in sys.modules if m.startswith('faultlab')))")  # fmt: skip
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()  # fmt: skip
    assert "faultlab.lab.servers.gate" in out
    for heavy in ("faultlab.lab.process.reference", "faultlab.lab.process.forkserver",
                  "faultlab.lab.servers.model"):  # fmt: skip
        assert heavy not in out, heavy
