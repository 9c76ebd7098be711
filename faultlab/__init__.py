"""faultlab: crash-test the durability of AI agent runtimes at semantic boundaries."""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
