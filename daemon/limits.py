"""Input limits shared by the configuration file and the API, so both accept the same values.

Numbers are strict (``true`` or ``"2600"`` is not a number), finite (``nan``, ``inf`` are
refused with "must be a finite number") and within sane bounds.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, StrictFloat, StrictInt

CAP_MIN_W = 1.0
"""The smallest power cap accepted (W): below it nothing could ever run."""
CAP_MAX_W = 1e9
"""The largest power cap accepted (W): a gigawatt, far above any machine."""
MAX_BODY_BYTES = 64 * 1024
"""Largest request body the API reads (every body it takes is a few bytes of JSON)."""


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


PowerWatts = Annotated[
    StrictFloat | StrictInt,
    BeforeValidator(_finite),
    Field(ge=CAP_MIN_W, le=CAP_MAX_W, allow_inf_nan=False),
]
"""A power cap in watts: a finite number from 1 W to 1 GW (not a boolean, not a string)."""

CycleSeconds = Annotated[
    StrictFloat | StrictInt,
    BeforeValidator(_finite),
    Field(gt=0, le=86400, allow_inf_nan=False),
]
"""The cycle period: a finite number of seconds, above 0, at most a day."""
