# A package's re-exports imported when first used (PEP 562 `__getattr__`):
# a process that needs one module of a package (the MCP tool server needs the
# gate's and the ledger's records, not the fork servers) does not pay for
# importing every module the package's `__init__` names.
from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["exports_on_use"]


def exports_on_use(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """The `__getattr__` of `package`, given its submodules and the names
    each defines (separated by spaces).  A name that is also a submodule's
    must not be listed: once that submodule is imported, the package's
    attribute is the module."""
    where = {name: f"{package}.{m}" for m, listed in names.items() for name in listed.split()}

    def on_use(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    return on_use
