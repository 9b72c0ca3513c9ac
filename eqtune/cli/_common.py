"""Small helpers shared by the CLI modules (output of JSON, consistent error text)."""

from __future__ import annotations

import json
import math
from typing import Any

import click


def _jsonable(obj: Any) -> Any:
    try:
        import numpy as np
    except ImportError:  # pragma: no cover
        np = None
    if np is not None:
        if isinstance(obj, np.generic):
            return obj.item()
        if isinstance(obj, np.ndarray):
            return obj.tolist()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    raise TypeError(f"not JSON serializable: {type(obj).__name__}")


def echo_json(obj: Any) -> None:
    """Print one JSON object on stdout (numpy scalars/arrays converted, NaN/inf -> null)."""
    click.echo(json.dumps(obj, default=_jsonable, indent=2, allow_nan=False))
