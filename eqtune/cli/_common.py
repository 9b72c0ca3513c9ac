"""Small helpers shared by the CLI modules (output of JSON, consistent error text)."""

from __future__ import annotations

import json
from typing import Any

import click

from eqtune.jsonutil import clean, jsonable


def echo_json(obj: Any) -> None:
    """Print one strict-JSON object on stdout (numpy values converted, NaN/inf -> null)."""
    text = json.dumps(obj, default=jsonable)  # NaN survives this step as the token NaN ...
    click.echo(json.dumps(clean(json.loads(text)), indent=2, allow_nan=False))  # ... and becomes null here
