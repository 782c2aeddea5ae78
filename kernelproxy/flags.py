"""``ndarray.flags`` of a remote array, from the metadata the pool sends with it."""

from __future__ import annotations

from typing import Any

from gpu_backend.protocol import messages as m

__all__ = ["Flags"]


class Flags:
    """``ndarray.flags``: the subset CuPy has (C/F contiguity, data ownership); also
    ``cupy._core.flags.Flags``, whose constructor takes the three values as CuPy's does."""

    __slots__ = ("_c", "_f", "_own")

    def __init__(self, c_contiguous: Any, f_contiguous: Any, owndata: Any) -> None:
        self._c, self._f, self._own = c_contiguous, f_contiguous, owndata

    # read-only, as CuPy's (setting one raises AttributeError)
    c_contiguous = property(lambda self: self._c)
    f_contiguous = property(lambda self: self._f)
    owndata = property(lambda self: self._own)

    @classmethod
    def from_bits(cls, bits: int) -> "Flags":
        """The flags of an array's metadata (the wire's bit set)."""
        return cls(bool(bits & m.FLAG_C), bool(bits & m.FLAG_F), bool(bits & m.FLAG_OWN))

    @property
    def fnc(self) -> bool:
        """F- and not C-contiguous."""
        return self.f_contiguous and not self.c_contiguous

    @property
    def forc(self) -> bool:
        """F- or C-contiguous."""
        return self.f_contiguous or self.c_contiguous

    def __getitem__(self, name: str) -> bool:
        key = {"C_CONTIGUOUS": "c_contiguous", "C": "c_contiguous", "F_CONTIGUOUS": "f_contiguous",
               "F": "f_contiguous", "OWNDATA": "owndata"}.get(name)
        if key is None:
            raise KeyError(name)
        return getattr(self, key)

    def __repr__(self) -> str:
        return (f"  C_CONTIGUOUS : {self.c_contiguous}\n  F_CONTIGUOUS : {self.f_contiguous}\n"
                f"  OWNDATA : {self.owndata}")
