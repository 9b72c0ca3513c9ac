"""One exception family for everything a user can get wrong or a device can do wrong.

Every message says *what* was wrong and *what to do*. The CLI prints the message on one
line and exits with code 2 (``EqtuneError.exit_code``); no traceback is shown.
"""

from __future__ import annotations


class EqtuneError(Exception):
    """Base class. ``str(err)`` is a complete one-line message for the user."""

    exit_code = 2


class InputError(EqtuneError):
    """Bad user input: an option value, a file, a definition."""


class ChannelError(InputError):
    """A channel definition or channel file cannot be used."""


class TouchstoneError(ChannelError):
    """A Touchstone file is malformed (names the file and, where known, the line)."""


class ConfigError(InputError):
    """A TOML definition (channel, SerDes profile, driver, study spec) is invalid."""


class EqRangeError(InputError):
    """An equalizer setting is outside what the profile or the module allows."""


class TuneError(InputError):
    """A tuning request cannot be run as asked (unknown knob, budget too small, ...)."""


class DeviceError(EqtuneError):
    """A device (module, adapter, instrument) did something unexpected."""


class TransportError(DeviceError):
    """The register transport failed (I2C NACK, timeout, unreachable adapter)."""


class ModuleError(DeviceError):
    """The CMIS module refused, is in the wrong state, or read back something else."""


class InstrumentError(DeviceError):
    """A lab instrument is unreachable, unexpected, or reports an error."""


class SessionError(EqtuneError):
    """A session journal is missing, unsafe to name, or cannot be resumed."""


class ProfileError(EqtuneError):
    """A tuning profile is invalid, tampered with, or does not fit the module."""
