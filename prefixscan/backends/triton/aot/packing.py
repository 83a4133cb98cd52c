"""A shipped variant's kernel parameters, packed in one call.

``cuLaunchKernel`` takes a kernel's parameters as an array of pointers, one per
parameter, each to a value of that parameter's size; the driver copies them into the
kernel's parameter buffer at the offsets the cubin records.  A variant's parameter list
(its JSON, :mod:`.variants`: pointers, ``i32``, ``i64``, in the kernel's order, Triton's
two scratch pointers last) is laid out here once, as a ctypes ``Structure`` with the
kernel's own layout (natural alignment: 8-byte pointers and ``i64``, 4-byte ``i32``),
followed by the array of pointers to its fields; one ``struct.pack_into`` of a matching
format writes the values and the pointers into a fresh block per launch (a fresh one, so
that threads and reentrant calls share nothing).  The format range-checks every integer,
so a value the parameter cannot hold raises instead of wrapping.  A planned relaunch
(:mod:`.relaunch`) keeps a block per thread instead (:meth:`Packing.reusable`), its
pointers written once, and writes only the values that change into its fields (values
whose range the engine guarantees): the driver copies the parameters during
``cuLaunchKernel``, as Triton's launcher assumes of the arguments on its stack.

A block's layout must be the kernel's: :func:`cubin_parameters` reads the parameters'
offsets and sizes from the cubin itself (the ``EIATTR_KPARAM_INFO`` records of its
``.nv.info.<kernel>`` section, and the total from ``EIATTR_CBANK_PARAM_SIZE``), and the
loader refuses a variant whose layout differs (:meth:`Packing.mismatch`).

The checks of every launch are the ones the per-parameter packing made: the number of
arguments, a tensor where the kernel takes a pointer, of the parameter's dtype and aligned
as the variant assumes, an ``int`` (not a bool or a NumPy integer) within the
parameter's width where it takes an integer; any failure is described per parameter
(:meth:`Packing.explain`), and nothing is launched.  Nothing here imports torch.
"""

from __future__ import annotations

import ctypes
import struct
import sys

from .variants import TRITON_TYPES

__all__ = ["Packing", "cubin_parameters", "EIATTR_KPARAM_INFO", "EIATTR_CBANK_PARAM_SIZE"]

#: ``.nv.info`` attributes read here (the CUDA binary utilities name them so).
EIATTR_KPARAM_INFO = 0x17
EIATTR_CBANK_PARAM_SIZE = 0x19
_EIFMT_NVAL, _EIFMT_BVAL, _EIFMT_HVAL, _EIFMT_SVAL = 1, 2, 3, 4

#: Parameter type -> (struct code, ctypes type, lowest, highest value).
_SCALARS = {"i32": ("i", ctypes.c_int32, -(1 << 31), (1 << 31) - 1),
            "i64": ("q", ctypes.c_int64, -(1 << 63), (1 << 63) - 1)}
_POINTER = ("Q", ctypes.c_uint64, 0, (1 << 64) - 1)
_TORCH_NAMES = {v: k for k, v in TRITON_TYPES.items()}  # "i32" -> "int32"


class Packing:
    """The parameter block of a variant whose JSON lists ``params``.  Raises ValueError
    for a parameter type it cannot pack, or trailing null pointers that are not last."""

    __slots__ = ("params", "count", "block", "format", "offsets", "sizes", "size", "tensors", "ints", "kinds",
                 "aligns", "dtype_names", "dtypes", "nulls")

    def __init__(self, params: list):
        params = list(params)
        nulls = [p for p in params if p.get("null")]
        head = params[: len(params) - len(nulls)]
        if any(p.get("null") for p in head):
            raise ValueError("null parameters must come last")
        codes, fields = [], []
        for i, p in enumerate(params):
            kind = p["type"]
            code = _POINTER if kind.startswith("*") else _SCALARS.get(kind)
            if code is None:
                raise ValueError(f"{p['name']}: parameter type {kind} is not packed here")
            codes.append(code[0])
            fields.append((self.field(i), code[1]))
        n = len(params)
        layout = type("Parameters", (ctypes.Structure,), {"_fields_": fields})
        self.block = type("ParameterBlock", (ctypes.Structure,),
                          {"_fields_": [("values", layout), ("pointers", ctypes.c_void_p * n)]})
        self.format = struct.Struct("@" + "".join(codes) + "P" * n)
        self.offsets = tuple(getattr(layout, f"p{i}").offset for i in range(n))
        self.sizes = tuple(getattr(layout, f"p{i}").size for i in range(n))
        self.size = self.offsets[-1] + self.sizes[-1] if n else 0  # the kernel's buffer: no trailing padding
        if self.format.size != ctypes.sizeof(self.block) or self.block.pointers.offset != ctypes.sizeof(layout) \
                or [struct.calcsize("@" + "".join(codes[: i + 1])) - self.sizes[i] for i in range(n)] \
                != list(self.offsets):
            raise ValueError("struct and ctypes disagree on the parameter layout")  # not on any known ABI
        self.params, self.count = params, len(head)
        self.kinds = tuple(p["type"].startswith("*") for p in head)  # True: a pointer (a tensor)
        self.tensors = tuple(i for i, k in enumerate(self.kinds) if k)
        self.ints = tuple(i for i, k in enumerate(self.kinds) if not k)
        self.aligns = tuple(head[i]["align"] for i in self.tensors)
        self.dtype_names = tuple(_TORCH_NAMES.get(head[i]["type"][1:]) for i in self.tensors)
        self.dtypes = None  # the torch dtypes, looked up on the first pack (torch is loaded then)
        self.nulls = (0,) * len(nulls)  # no global or profile scratch (the builder checks)

    def pack(self, leaves: list):
        """``(array of pointers to the parameters, the block holding them)`` for the
        flattened arguments ``leaves`` (tensors and ints, in the kernel's order), or a
        string saying what does not match (:meth:`explain`)."""
        if len(leaves) != self.count:
            return self.explain(leaves)
        dtypes = self.dtypes
        if dtypes is None:
            dtypes = self.dtypes = _torch_dtypes(self.dtype_names)
        pointers = []
        last = last_dtype = last_align = pointer = None
        try:
            # A tensor passed again for the next parameter (the identity, the status words)
            # under the same dtype and alignment is checked once.
            for i, dtype, align in zip(self.tensors, dtypes, self.aligns):
                t = leaves[i]
                if t is not last or dtype is not last_dtype or align != last_align:
                    if t.dtype is not dtype:
                        return self.explain(leaves)
                    pointer = t.data_ptr()
                    if pointer % align:
                        return self.explain(leaves)
                    last, last_dtype, last_align = t, dtype, align
                pointers.append(pointer)
        except AttributeError:  # not a tensor
            return self.explain(leaves)
        for i in self.ints:
            if type(leaves[i]) is not int:
                return self.explain(leaves)
        values = list(leaves)
        for i, p in zip(self.tensors, pointers):
            values[i] = p
        block = self.fill(values)
        if block is None:  # an integer outside its parameter's width
            return self.explain(leaves)
        return block.pointers, block

    def fill(self, values: list):
        """A fresh block holding ``values`` (one int per parameter but the trailing null
        pointers, pointers as addresses) and the pointers to them (``block.pointers``), or
        None where an integer is outside its parameter's width.  Nothing is checked but
        the widths: :meth:`pack` checks the arguments first, a planned relaunch
        (:meth:`reusable`) takes the values of a launch that was packed so."""
        block = self.block()
        base = ctypes.addressof(block)
        try:
            self.format.pack_into(block, 0, *values, *self.nulls, *[base + o for o in self.offsets])
        except struct.error:
            return None
        return block

    def reusable(self, values: list):
        """``(block, address of its pointer array)``: a block of :meth:`fill` for launch
        after launch (``values`` a packed launch's: within their widths); a launch then
        writes the values that change into the fields of ``block.values`` (named by
        :meth:`field`)."""
        block = self.fill(values)
        if block is None:
            raise ValueError("a parameter value outside its width")
        return block, ctypes.addressof(block) + self.block.pointers.offset

    @staticmethod
    def field(index: int) -> str:
        """The name of parameter ``index``'s field in ``block.values``."""
        return f"p{index}"

    def explain(self, leaves: list) -> str:
        """What in ``leaves`` the variant does not take (the first mismatch, by
        parameter): the count, a dtype, an alignment the variant assumes, an integer
        outside its width."""
        head = self.params[: self.count]
        if len(leaves) != len(head):
            return f"{len(leaves)} arguments for {len(head)} parameters"
        for value, p in zip(leaves, head):
            kind = p["type"]
            if kind.startswith("*"):
                if not hasattr(value, "data_ptr"):
                    return f"{p['name']}: not a tensor"
                if TRITON_TYPES.get(str(value.dtype).rpartition(".")[2]) != kind[1:]:
                    return f"{p['name']}: {value.dtype} for {kind}"
                if value.data_ptr() % p["align"]:
                    return f"{p['name']}: not aligned to {p['align']} bytes"
            else:
                _, _, lo, hi = _SCALARS[kind]
                if type(value) is not int or not lo <= value <= hi:
                    return f"{p['name']}: {value!r} is not {kind}"
        return "the parameters do not pack"  # not reached: pack fails only where a check above does

    def mismatch(self, cubin_params: list, total: int | None) -> str:
        """Where this layout differs from the kernel's parameters in its cubin
        (:func:`cubin_parameters`); "" when they agree."""
        mine = list(zip(self.offsets, self.sizes))
        if cubin_params != mine:
            return f"parameters at (offset, size) {cubin_params} in the cubin, {mine} packed"
        if total is not None and total != self.size:
            return f"{total} bytes of parameters in the cubin, {self.size} packed"
        return ""


def _torch_dtypes(names: tuple) -> list:
    torch = sys.modules["torch"]  # loaded: the arguments are tensors
    return [getattr(torch, name) if name else None for name in names]


def cubin_parameters(cubin: bytes, kernel: str) -> tuple[list, int | None]:
    """``([(offset, size) of each parameter, in order], total bytes or None)`` of kernel
    ``kernel`` in the ELF ``cubin``, from its ``.nv.info.<kernel>`` section.  Raises
    ValueError when the file is not a 64-bit little-endian ELF, lacks the section, or
    its records do not number the parameters 0, 1, ... once each."""
    section = _elf_sections(cubin).get(f".nv.info.{kernel}")
    if section is None:
        raise ValueError(f"no .nv.info.{kernel} section")
    found: dict = {}
    total = None
    i = 0
    while i + 2 <= len(section):
        fmt, attr = section[i], section[i + 1]
        if fmt == _EIFMT_NVAL:
            i += 2
        elif fmt == _EIFMT_BVAL:
            i += 3
        elif fmt == _EIFMT_HVAL:
            if attr == EIATTR_CBANK_PARAM_SIZE:
                total = struct.unpack_from("<H", section, i + 2)[0]
            i += 4
        elif fmt == _EIFMT_SVAL:
            (size,) = struct.unpack_from("<H", section, i + 2)
            if attr == EIATTR_KPARAM_INFO:
                if size < 12:
                    raise ValueError("short EIATTR_KPARAM_INFO record")
                _, ordinal, offset, flags = struct.unpack_from("<IHHI", section, i + 4)
                if ordinal in found:
                    raise ValueError(f"parameter {ordinal} recorded twice")
                found[ordinal] = (offset, (flags >> 18) & 0x3FFF)
            i += 4 + size
        else:
            raise ValueError(f"unknown .nv.info record format {fmt}")
    if sorted(found) != list(range(len(found))):
        raise ValueError(f"parameter ordinals {sorted(found)}")
    return [found[k] for k in range(len(found))], total


def _elf_sections(elf: bytes) -> dict:
    """Section name -> contents of a 64-bit little-endian ELF file."""
    if elf[:4] != b"\x7fELF" or len(elf) < 64 or elf[4] != 2 or elf[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    (shoff,) = struct.unpack_from("<Q", elf, 0x28)
    entsize, count, names_index = struct.unpack_from("<HHH", elf, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + k * entsize) for k in range(count)]
    names_at = headers[names_index][4]
    out = {}
    for h in headers:
        start = names_at + h[0]
        name = elf[start: elf.index(b"\0", start)].decode("ascii", "replace")
        out[name] = elf[h[4]: h[4] + h[5]] if h[1] != 8 else b""  # SHT_NOBITS: no contents
    return out
