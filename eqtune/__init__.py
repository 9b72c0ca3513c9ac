"""eqtune: link-equalization tuning for high-speed PAM4 module links.

The public API is imported lazily from the sub-packages (``eqtune.channel``,
``eqtune.serdes``, ``eqtune.eye``, ``eqtune.tune``, ``eqtune.drivers``,
``eqtune.session``, ``eqtune.study``) so that ``eqtune --help`` stays fast.
"""

__version__ = "0.1.0"
