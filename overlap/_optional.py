"""Optional dependencies, imported when first used, with the pip extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["MissingExtra", "require"]


class MissingExtra(ImportError):
    """An optional dependency is not installed (the message says how to get it)."""


def require(module: str, extra: str, purpose: str) -> ModuleType:
    """Import ``module`` or raise :class:`MissingExtra` naming the pip extra.

    Parameters
    ----------
    module : str
        Dotted module name, e.g. ``"pyarrow.parquet"``.
    extra : str
        The ``overlap-metrics[...]`` extra that installs it.
    purpose : str
        What needs it, for the message ("reading Parquet").
    """
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtra(
            f"{purpose} needs {module.split('.')[0]}, which is not installed: "
            f"pip install 'overlap-metrics[{extra}]'"
        ) from None
