"""How the archive's data is named outside: camelCase (``pageCount``, ``baseVersion``),
like the rest of the API. The dataclasses of ``wiki.models`` and ``wiki.tree`` carry
``CAMEL_CASE``; the API answers them through it and the CLI's ``--json`` prints
``as_json``, so both speak the same keys. Only field names change: the keys of a page's
front matter are its author's and stay as written."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, TypeAdapter
from pydantic.alias_generators import to_camel

# validate_by_name: FastAPI checks a returned dataclass as a dict of its field names.
CAMEL_CASE = ConfigDict(alias_generator=to_camel, validate_by_name=True, serialize_by_alias=True)


_ADAPTERS: dict[type[Any], TypeAdapter[Any]] = {}  # one per dataclass: built once


def _adapter(kind: type[Any]) -> TypeAdapter[Any]:
    adapter = _ADAPTERS.get(kind)
    if adapter is None:
        adapter = _ADAPTERS[kind] = TypeAdapter(kind)
    return adapter


def as_json(value: Any) -> Any:
    """A wiki value (a dataclass of ``wiki.models``, or a list of them) as JSON data,
    keyed as the API answers it."""
    if isinstance(value, list | tuple):
        return [as_json(item) for item in value]
    return _adapter(type(value)).dump_python(value, mode="json", by_alias=True)
