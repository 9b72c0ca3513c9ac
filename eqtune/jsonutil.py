"""JSON helpers shared by the CLI, the journal and reports: strict JSON, no NaN."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any


def jsonable(obj: Any) -> Any:
    """``json.dumps(default=...)`` hook: numpy scalars/arrays, ``to_dict()`` objects, dataclasses,
    sets/tuples and paths become plain JSON values."""
    try:
        import numpy as np
    except ImportError:  # pragma: no cover
        np = None
    if np is not None:
        if isinstance(obj, np.generic):
            return obj.item()
        if isinstance(obj, np.ndarray):
            return obj.tolist()
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    if isinstance(obj, Path):
        return str(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    raise TypeError(f"not JSON serializable: {type(obj).__name__}")


def clean(obj: Any) -> Any:
    """Replace non-finite floats with None, recursively (strict JSON has no NaN or Infinity)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean(v) for v in obj]
    return obj
