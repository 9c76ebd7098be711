# A package's re-exports imported when first used (PEP 562 `__getattr__`):
# a process that needs one module of a package (the MCP tool server needs the
# gate's and the ledger's records, not the fork servers) does not pay for
# importing every module the package's `__init__` names.  The one helper every
# lazy package of the lab uses (faultlab.lab, campaigns, process, servers).
from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["exports_on_use"]


def exports_on_use(package: str, names: Mapping[str, str], *,
                   renamed: Mapping[str, str] | None = None) -> Callable[[str], Any]:  # fmt: skip
    """The `__getattr__` of `package`, given its modules and the names each
    defines (separated by spaces).  A module is named absolutely
    (`faultlab.lab.report`) or, without a dot, as a submodule of `package`.
    `renamed` maps an exported name to its name in the module that defines
    it.  A value, once imported, is kept in the package (the next use is a
    plain attribute).  A name that is also a submodule's must not be listed:
    once that submodule is imported, the package's attribute is the module."""
    where: dict[str, str] = {}
    for module, listed in names.items():
        home = module if "." in module else f"{package}.{module}"
        for name in listed.split():
            if name in where:
                raise ValueError(f"{package}: {name!r} is listed twice")
            where[name] = home
    own = dict(renamed or {})

    def on_use(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), own.get(name, name))
        setattr(sys.modules[package], name, value)
        return value

    return on_use
