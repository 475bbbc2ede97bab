"""No dataclass on the gateway's request path builds a field through a parametrized generic (issue 12).

`field(default_factory=dict[str, int])` calls `types.GenericAlias`, which builds the dict and then
tries to set `__orig_class__` on it; a dict has no `__dict__`, so an AttributeError is raised,
formatted and swallowed: about 2,000 instructions per field, per object. `AgentLink` is made per
2026-07-28 request; callgrind found two of them in every forwarded call. Plain typed factory
functions cost a call.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import types

import mcp_center.gateway
import mcp_center.runtime
from mcp_center.gateway.fastpath import AgentLink

HOT_PACKAGES = (mcp_center.gateway, mcp_center.runtime)


def _dataclasses_of(package: types.ModuleType) -> list[type]:
    modules = [
        importlib.import_module(info.name) for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".")
    ]
    return [
        value
        for module in modules
        for value in vars(module).values()
        if isinstance(value, type) and value.__module__ == module.__name__ and dataclasses.is_dataclass(value)
    ]


def test_no_hot_dataclass_field_is_built_through_a_generic_alias() -> None:
    classes = [cls for package in HOT_PACKAGES for cls in _dataclasses_of(package)]
    assert AgentLink in classes
    offenders = [
        f"{cls.__module__}.{cls.__qualname__}.{item.name}"
        for cls in classes
        for item in dataclasses.fields(cls)
        if isinstance(item.default_factory, types.GenericAlias)
    ]
    assert offenders == []


class _Never:
    def cancel(self) -> None:
        raise AssertionError("not cancelled here")


def test_a_links_fields_are_fresh_per_link() -> None:
    first, second = AgentLink(None, {}), AgentLink(None, {})
    first.calls[1] = _Never()
    assert second.calls == {} and second.waiting == {}
    assert first.calls is not second.calls and first.waiting is not second.waiting
