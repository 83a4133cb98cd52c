"""Sort keys as order-preserving unsigned integers: what every backend's radix sort sorts on.

A radix sort orders unsigned integers by their digits.  Every key dtype maps to
unsigned integers of its width so that the unsigned order is the order wanted
(the "bit twiddling" of Terdiman 2000, "Radix sort revisited", and of CUB's
``RadixSortTwiddle``):

* unsigned integers: the bits as they are; bool: 0 or 1 (any nonzero byte is 1);
* signed integers: the sign bit flipped (two's complement becomes offset binary);
* floats: negative numbers have every bit flipped (a larger magnitude is a smaller
  number), positive ones their sign bit set; -0.0 maps to +0.0's pattern (the two
  are equal, so a stable sort keeps them in input order, as NumPy does); every NaN
  maps to the top (all ones: NaNs sort last, in input order);
* ``key_bits=b`` (integer keys known to lie in [0, 2^b)): the low ``b`` bits only,
  so ceil(b / digit bits) passes instead of the dtype's width;
* descending: the mapped key complemented within its bits (stable: equal keys keep
  their input order; NaNs come first, as ``torch.sort(descending=True)``).

The sorts move the keys' original bits and map them again in every pass (a few
integer operations), so that the output holds the input's exact bits (-0.0 stays
-0.0, NaN payloads stay).  :class:`KeyCode` describes one mapping; each backend
applies it in its kernels (:mod:`.compiled`, :mod:`.triton_kernels`) and
:func:`ordered_keys` is the NumPy version the tests compare against.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["KeyCode", "key_code", "ordered_keys", "KINDS", "FLOAT_INF_BITS", "SORTABLE_DTYPES"]

#: How a dtype's bits map (the kernels take the index): unsigned, signed, float, bool.
KINDS = ("unsigned", "signed", "float", "bool")

#: Per float dtype, the bits of +inf: a magnitude above them is a NaN.
FLOAT_INF_BITS = {"float16": 0x7C00, "bfloat16": 0x7F80, "float32": 0x7F800000, "float64": 0x7FF0000000000000}

_WIDTHS = {"bool": 8, "int8": 8, "uint8": 8, "int16": 16, "uint16": 16, "int32": 32, "uint32": 32, "int64": 64,
           "uint64": 64, "float16": 16, "bfloat16": 16, "float32": 32, "float64": 64}
#: The key dtypes the sorts take (complex numbers have no order here).
SORTABLE_DTYPES = tuple(_WIDTHS)


@dataclass(frozen=True)
class KeyCode:
    """How the keys of one sort map to unsigned integers.

    ``dtype``: the keys' dtype name; ``width``: bits of one key's storage (8, 16,
    32, 64); ``kind``: an entry of :data:`KINDS`; ``bits``: the low bits of the
    mapped key that are sorted on (``width``, 1 for bool, or ``key_bits``);
    ``descending``; ``key_bits``: as given (None: the whole key)."""

    dtype: str
    width: int
    kind: str
    bits: int
    descending: bool
    key_bits: int | None = None

    @property
    def kind_index(self) -> int:
        return KINDS.index(self.kind)

    @property
    def sign(self) -> int:
        return 1 << (self.width - 1)

    @property
    def ones(self) -> int:
        """All ones in the key's width."""
        return (1 << self.width) - 1

    @property
    def mask(self) -> int:
        """The sorted bits of a mapped key (``bits`` low bits)."""
        return (1 << self.bits) - 1

    @property
    def flip(self) -> int:
        """XORed into the masked key: its bits for a descending sort, else 0."""
        return self.mask if self.descending else 0

    @property
    def inf_bits(self) -> int:
        """+inf's bits for floats (a larger magnitude is a NaN), else 0."""
        return FLOAT_INF_BITS.get(self.dtype, 0)

    def passes(self, digit_bits: int) -> int:
        """Digit passes of ``digit_bits`` bits each over the sorted bits."""
        return -(-self.bits // digit_bits)

    @property
    def storage(self) -> np.dtype:
        """The unsigned NumPy dtype whose elements hold one key's bits."""
        return np.dtype(f"uint{self.width}")


def key_code(dtype: str, descending: bool = False, key_bits: int | None = None) -> KeyCode:
    """The :class:`KeyCode` of keys of ``dtype`` (a name of :data:`SORTABLE_DTYPES`;
    ``key_bits`` already checked)."""
    width = _WIDTHS[dtype]
    if dtype == "bool":
        kind = "bool"
    elif dtype in FLOAT_INF_BITS:
        kind = "float"
    else:
        kind = "unsigned" if dtype.startswith("uint") else "signed"
    bits = 1 if kind == "bool" else width
    if key_bits is not None:
        bits = min(key_bits, bits)
    return KeyCode(dtype, width, kind, bits, bool(descending), key_bits)


def ordered_keys(bits: np.ndarray, code: KeyCode) -> np.ndarray:
    """The mapped keys (uint64) of the raw key bits ``bits`` (an array of
    ``code.storage``): sorting them stably sorts the keys as ``code`` says."""
    u = np.asarray(bits).astype(np.uint64)
    if code.kind == "bool":
        k = (u != 0).astype(np.uint64)
    elif code.kind == "signed":
        k = u ^ np.uint64(code.sign)
    elif code.kind == "float":
        sign, ones = np.uint64(code.sign), np.uint64(code.ones)
        magnitude = u & (sign - np.uint64(1))
        k = np.where((u & sign) != 0, u ^ ones, u | sign)
        k = np.where(magnitude == 0, sign, k)
        k = np.where(magnitude > np.uint64(code.inf_bits), ones, k)
    else:
        k = u
    return (k & np.uint64(code.mask)) ^ np.uint64(code.flip)
