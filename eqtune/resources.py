"""Where the shipped data lives: the channel library, SerDes profiles and driver definitions.

In a source checkout (editable install) these are the top-level ``channels/`` and ``drivers/``
folders; in an installed wheel they are copied to ``eqtune/_data/`` (see pyproject.toml).
"""

from __future__ import annotations

import os
from pathlib import Path

_PKG = Path(__file__).resolve().parent


def _data_dir(name: str) -> Path:
    checkout = _PKG.parent / name
    if checkout.is_dir():
        return checkout
    return _PKG / "_data" / name


def channels_dir() -> Path:
    """The shipped channel library (``*.toml`` definitions and generated Touchstone files)."""
    return _data_dir("channels")


def serdes_profiles_dir() -> Path:
    """Shipped SerDes profiles (``channels/serdes/*.toml``)."""
    return channels_dir() / "serdes"


def drivers_dir() -> Path:
    """Declarative instrument driver definitions (``drivers/*.toml``)."""
    return _data_dir("drivers")


def sessions_dir(override: str | os.PathLike[str] | None = None) -> Path:
    """Session journals and profiles: option > ``EQTUNE_SESSIONS`` > ``./sessions``."""
    if override:
        return Path(override)
    env = os.environ.get("EQTUNE_SESSIONS")
    return Path(env) if env else Path.cwd() / "sessions"
