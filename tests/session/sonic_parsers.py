"""Load SONiC's own, unmodified SI-file parsers beside eqtune (never copied, never committed).

The sonic-platform-daemons tree is found via ``$EQTUNE_SONIC_ROOT`` (a folder holding
``sonic-platform-daemons``, or that tree itself), else ``/work/ext`` or ``../ext`` next to the checkout.
Only the parsers' imports that need a running switch (swsscommon, sonic_py_common, sonic_platform_base,
the xcvrd daemon module) are stubbed; ``xcvrd_utilities/optics_si_parser.py``,
``media_settings_parser.py`` and ``common.py`` (their port-range helper) run as they are.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DAEMONS = "sonic-platform-daemons"


def daemons_root() -> Path | None:
    """The sonic-platform-daemons checkout, or None."""
    env = os.environ.get("EQTUNE_SONIC_ROOT")
    cands = [Path(env), Path(env) / DAEMONS] if env else []
    cands += [Path("/work/ext") / DAEMONS, REPO.parent / "ext" / DAEMONS, REPO.parent.parent / "ext" / DAEMONS]
    for c in cands:
        if (c / "sonic-xcvrd" / "xcvrd" / "xcvrd_utilities" / "optics_si_parser.py").is_file():
            return c
    return None


def daemons_commit(root: Path) -> str:
    try:
        return subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True, timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


class _AnyMeta(type):
    def __getattr__(cls, name: str) -> Any:
        return _Any


class _Any(metaclass=_AnyMeta):
    """Stands in for anything a stubbed import provides (loggers, tables, base classes)."""

    def __init__(self, *a: Any, **k: Any) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        return _Any()

    def __call__(self, *a: Any, **k: Any) -> Any:
        return _Any()


class _StubModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Any


_STUBS = ("swsscommon", "swsscommon.swsscommon", "sonic_py_common", "sonic_py_common.device_info",
          "sonic_py_common.syslogger", "sonic_py_common.daemon_base", "sonic_py_common.multi_asic",
          "sonic_py_common.logger", "sonic_platform_base", "sonic_platform_base.sfp_base",
          "sonic_platform_base.sonic_xcvr", "sonic_platform_base.sonic_xcvr.api",
          "sonic_platform_base.sonic_xcvr.api.public", "sonic_platform_base.sonic_xcvr.api.public.c_cmis",
          "xcvrd.xcvrd")


@contextmanager
def sonic_parsers(root: Path) -> Iterator[tuple[Any, Any]]:
    """(optics_si_parser, media_settings_parser) imported from ``root``; sys.modules restored after."""
    pkg_dir = root / "sonic-xcvrd" / "xcvrd"
    saved = {k: v for k, v in sys.modules.items() if k == "xcvrd" or k.startswith(("xcvrd.", "swsscommon",
                                                                                  "sonic_py_common", "sonic_platform_base"))}
    try:
        for k in list(saved):
            del sys.modules[k]
        for name in _STUBS:
            mod = _StubModule(name)
            mod.__path__ = []  # a package, so submodule imports resolve to the stubs above
            sys.modules[name] = mod
        pkg = types.ModuleType("xcvrd")
        pkg.__path__ = [str(pkg_dir)]
        sys.modules["xcvrd"] = pkg
        pkg.xcvrd = sys.modules["xcvrd.xcvrd"]  # type: ignore[attr-defined]
        for name, mod in list(sys.modules.items()):
            if "." in name and name in _STUBS:
                parent, _, child = name.rpartition(".")
                setattr(sys.modules[parent], child, mod)
        si = importlib.import_module("xcvrd.xcvrd_utilities.optics_si_parser")
        media = importlib.import_module("xcvrd.xcvrd_utilities.media_settings_parser")
        yield si, media
    finally:
        for k in [k for k in sys.modules if k == "xcvrd" or k.startswith(("xcvrd.", "swsscommon", "sonic_py_common",
                                                                          "sonic_platform_base"))]:
            del sys.modules[k]
        sys.modules.update(saved)
