"""The lab's lazy packages (faultlab.lab, campaigns, process, servers) share
one `__getattr__` (process/exports.py): every public name resolves, the
table lists nothing beyond `__all__`, and a mistake in a table is refused."""

from __future__ import annotations

import importlib
import subprocess
import sys
import types

import pytest

from faultlab.lab.process.exports import exports_on_use

LAZY = ("faultlab.lab", "faultlab.lab.campaigns", "faultlab.lab.process", "faultlab.lab.servers")


@pytest.mark.parametrize("package", LAZY)
def test_every_public_name_resolves_and_nothing_else_is_listed(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        assert getattr(module, name) is not None, name
    listed = {n for names in module._NAMES.values() for n in names.split()}
    assert listed <= set(module.__all__), sorted(listed - set(module.__all__))


def test_a_name_is_imported_on_first_use_only() -> None:
    probe = ("import sys, faultlab.lab as lab\n"
             "assert 'faultlab.lab.campaigns.fuzz' not in sys.modules\n"
             "lab.FuzzSettings\n"
             "assert 'faultlab.lab.campaigns.fuzz' in sys.modules\n"
             "assert 'FuzzSettings' in vars(lab)\n")  # fmt: skip
    subprocess.run([sys.executable, "-c", probe], check=True, timeout=60)


def test_renamed_and_unknown_names() -> None:
    package = types.ModuleType("lazy_probe")
    sys.modules["lazy_probe"] = package
    try:
        on_use = exports_on_use("lazy_probe", {"os.path": "joined"}, renamed={"joined": "join"})
        import os.path

        assert on_use("joined") is os.path.join
        assert package.joined is os.path.join
        with pytest.raises(AttributeError, match="'lazy_probe' has no attribute 'missing'"):
            on_use("missing")
    finally:
        del sys.modules["lazy_probe"]


def test_a_name_listed_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="'x' is listed twice"):
        exports_on_use("p", {"a": "x y", "b": "x"})
