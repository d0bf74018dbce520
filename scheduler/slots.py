"""Records made by setting their slots directly, for the hot paths that make one per start,
cycle or switch (a frozen dataclass's ``__init__`` calls ``object.__setattr__`` once per field).

Each maker module unpacks :func:`slot_setters` of its class into one setter per field, then
builds instances with ``new(Class)`` and the setters, only for values that need no check;
``tests/connectors/test_simulated_records.py`` and the makers' tests compare every field with
what the constructor sets.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

new = object.__new__
"""``new(Class)``: an instance with no slot set yet."""


def slot_setters(cls: type) -> tuple[Callable[[Any, Any], None], ...]:
    """The ``__set__`` of each slot of the slotted dataclass ``cls``, in field order (unpack it
    into as many names as it has fields: a field added or removed then fails at import)."""
    return tuple(cls.__dict__[f.name].__set__ for f in dataclasses.fields(cls))
