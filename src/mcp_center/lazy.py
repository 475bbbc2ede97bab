"""Package exports imported on first use (PEP 562), for the packages a one-shot CLI process imports
but seldom needs whole: `config`, `gateway`, `interchange`, `store` (issue 16: `--help` and the REST
verbs start without the SDK, fastapi or the pydantic models they would pull in).

A package lists its lazy names in a `_LAZY` table (name -> module), names them in `__all__` and under
`TYPE_CHECKING` for the type checker, and installs the two module hooks this builds:

    __getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, table: Mapping[str, str], namespace: MutableMapping[str, object]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of `package` for the names of `table` (name -> module).

    `__getattr__(name)` imports the name's module on first access and keeps the value in the
    package's `namespace`, so the next lookup is a plain module attribute; `__dir__()` lists the
    lazy names beside the loaded ones (help() and completion see them).

    Raises:
        AttributeError: (from `__getattr__`) a name neither loaded nor in `table`.
        ImportError: (from `__getattr__`) the name's module failed to import.
    """

    def __getattr__(name: str) -> object:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *table})

    return __getattr__, __dir__
