"""Array type aliases shared by the typed rooms (channel, serdes, eye, tune).

``FloatArray`` is a float64 ndarray of any shape (the engine works in V, s, Hz, dB, UI as the names
say); ``IntArray`` an integer index array; ``BoolArray`` a mask; ``ComplexArray`` a complex128
response (S-parameters, transfer functions). Annotations only: importing this module costs nothing
beyond numpy's typing stubs (numpy itself is imported only when type checking).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    FloatArray: TypeAlias = NDArray[np.float64]
    IntArray: TypeAlias = NDArray[np.intp]
    BoolArray: TypeAlias = NDArray[np.bool_]
    ComplexArray: TypeAlias = NDArray[np.complex128]
else:  # at run time the aliases are only names (``from __future__ import annotations`` everywhere)
    FloatArray = IntArray = BoolArray = ComplexArray = object

__all__ = ["BoolArray", "ComplexArray", "FloatArray", "IntArray"]
