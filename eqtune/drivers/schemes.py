"""Resource schemes that name no adapter of this package (``emu:``): a declarative registry.

The hardware room (``eqtune.drivers``) parses and opens ``i2c:``, ``optoe:``, ``ftdi://`` and
``net:`` itself. Other schemes are data: a scheme name -> two ``"module:function"`` strings, imported
with :mod:`importlib` the first time such a resource is parsed or opened (no eval, nothing imported
before). The emulators (``eqtune.emulate``) are registered here as ``emu:``, so ``drivers`` never
imports the package that stands in for hardware (tests/test_layering.py checks the imports).

``parse(resource, rest) -> ResourceSpec``: ``rest`` is the text after ``"scheme:"``; raises
:class:`~eqtune.errors.InputError` (one line: what was wrong, an example) before anything is opened.
``open(spec, resource, **kwargs) -> Transport``: the register transport of a parsed resource.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Scheme:
    """Where a resource scheme's parser and opener live (``"package.module:function"``)."""

    parse: str
    open: str


SCHEMES: dict[str, Scheme] = {
    # the in-process CMIS module emulator (eqtune/emulate/transport.py)
    "emu": Scheme(parse="eqtune.emulate.transport:parse_emu_resource",
                  open="eqtune.emulate.transport:open_emu_transport"),
}


def register_scheme(name: str, *, parse: str, open: str) -> None:  # noqa: A002 - the registry's word
    """Add (or replace) scheme ``name`` (lower case, no colon) with its parser and opener."""
    for ref in (parse, open):
        module, sep, func = ref.partition(":")
        if not (sep and module and func.isidentifier()):
            raise ValueError(f"scheme {name!r}: {ref!r} is not 'package.module:function'")
    if not name.isalnum() or name != name.lower():
        raise ValueError(f"scheme name {name!r} must be lower-case letters/digits")
    SCHEMES[name] = Scheme(parse=parse, open=open)


def scheme_function(name: str, role: str) -> Callable[..., Any]:
    """The ``role`` ("parse" or "open") function of scheme ``name``, imported on first use."""
    module, _, func = getattr(SCHEMES[name], role).partition(":")
    function: Callable[..., Any] = getattr(importlib.import_module(module), func)
    return function
