"""Order-1 scans of contiguous lanes, four elements at a time in one vector register.

Numba has no vector types and its SLP vectoriser is off, and a scan's
loop-carried dependency keeps LLVM's loop vectoriser away, so the scalar kernel
(:func:`.kernels.scan_lanes`) spends about one add per element on the chain and
as many on the group's local scan.  Here an intrinsic loads four elements as one
LLVM vector, scans them in registers in two shift-and-combine steps (the
in-register scan of Hillis & Steele 1986 within a vector, as in Zhang, Wang &
Ross 2020, "Parallel Prefix Sum with SIMD", section 3), combines the carry into
all four and stores them; the carry chain is one scalar combine per vector, off
the path of the loads and stores.  Four lanes, because wider ones need
lane-crossing shifts that this machine runs slowly (``vexpandps`` for eight
float32 lanes measured at half of copy speed).

Used for ``add`` on integers and floats (floats shift in the identity ``-0.0``,
so signed zeros come out as a serial scan's) and ``and``/``or``/``xor``
on integers: forward order-1 scans of C-contiguous lanes
whose input, accumulator and output share one plain dtype.  Everything else
stays with the scalar kernels.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from .jit_support import PLAIN, Tag, TagType, combine, literal_jitable

__all__ = ["LANES", "VECTOR_OPS", "supports", "scan_lanes_vector"]

LANES = 4
# Integer max/min measured at half the scalar kernel's speed this way (the scalar
# kernel's grouped compare-and-select already runs at 0.7 of copy): left out.
VECTOR_OPS = {"f": ("add",), "i": ("add", "and", "or", "xor"), "u": ("add", "and", "or", "xor")}


def supports(op, x: np.ndarray, y: np.ndarray, identity: tuple, fmts: tuple) -> bool:
    """Whether :func:`scan_lanes_vector` runs this order-1 scan of ``(lanes, n)`` views."""
    if not isinstance(op, Tag) or not op.name.startswith("op_") or len(identity) != 1:
        return False
    kind = x.dtype.kind
    return (op.name[3:] in VECTOR_OPS.get(kind, ()) and x.dtype == y.dtype == np.asarray(identity[0]).dtype
            and x.flags.c_contiguous and y.flags.c_contiguous
            and all(f is PLAIN for group in fmts for f in group))


def _combine_ir(builder, name: str, a, b, is_float: bool):
    if name == "add":
        return builder.fadd(a, b) if is_float else builder.add(a, b)
    return {"and": builder.and_, "or": builder.or_, "xor": builder.xor}[name](a, b)


def _vector_step(inclusive: bool):
    @intrinsic
    def step(typingctx, op, x, y, i, carry, fill):
        """Scan ``x[i:i+LANES]`` after ``carry`` into ``y[i:i+LANES]`` (a shift-in of
        ``fill``, the operator's identity); returns the carry after them."""
        if not isinstance(op, TagType) or not isinstance(x, types.Array):
            return None
        name, elem = op.tag[3:], x.dtype
        is_float = isinstance(elem, types.Float)

        def codegen(context, builder, signature, args):
            _, xv, yv, index, c, f = args
            c = context.cast(builder, c, signature.args[4], elem)
            f = context.cast(builder, f, signature.args[5], elem)
            xa = context.make_array(signature.args[1])(context, builder, xv)
            ya = context.make_array(signature.args[2])(context, builder, yv)
            vector = ir.VectorType(context.get_value_type(elem), LANES)
            lane = ir.VectorType(ir.IntType(32), LANES)
            at = [index]
            v = builder.load(builder.bitcast(builder.gep(xa.data, at), vector.as_pointer()), align=1)
            fills = builder.shuffle_vector(builder.insert_element(ir.Constant(vector, ir.Undefined), f,
                                                                  ir.Constant(ir.IntType(32), 0)),
                                           ir.Constant(vector, ir.Undefined), ir.Constant(lane, [0] * LANES))
            shift = 1
            while shift < LANES:  # lane k combines lane k - shift (the fill below lane shift)
                mask = [k - shift if k >= shift else LANES for k in range(LANES)]
                shifted = builder.shuffle_vector(v, fills, ir.Constant(lane, mask))
                v = _combine_ir(builder, name, shifted, v, is_float)
                shift *= 2
            last = builder.extract_element(v, ir.Constant(ir.IntType(32), LANES - 1))
            carries = builder.shuffle_vector(builder.insert_element(ir.Constant(vector, ir.Undefined), c,
                                                                    ir.Constant(ir.IntType(32), 0)),
                                             ir.Constant(vector, ir.Undefined), ir.Constant(lane, [0] * LANES))
            if not inclusive:  # lane k holds the lanes before it
                v = builder.shuffle_vector(v, fills, ir.Constant(lane, [LANES] + list(range(LANES - 1))))
            out = _combine_ir(builder, name, carries, v, is_float)
            builder.store(out, builder.bitcast(builder.gep(ya.data, at), vector.as_pointer()), align=1)
            return _combine_ir(builder, name, c, last, is_float)

        return elem(op, x, y, i, carry, fill), codegen

    return step


_step_inclusive = _vector_step(True)
_step_exclusive = _vector_step(False)


@literal_jitable
def _lane(op, xr, yr, carry, fill, start, inclusive):
    n = xr.shape[0]
    full = start + (n - start) // LANES * LANES
    for i in range(start, full, LANES):
        if inclusive:
            carry = _step_inclusive(op, xr, yr, i, carry, fill)
        else:
            carry = _step_exclusive(op, xr, yr, i, carry, fill)
    for i in range(full, n):
        nxt = combine(op, (carry,), (xr[i],))[0]
        yr[i] = nxt if inclusive else carry
        carry = nxt


def _scan_lanes_vector(xs, ys, op, fmts, ident, seeds, flags, order):
    """The scan of every row of the C-contiguous ``(lanes, n)`` arrays (same
    signature as :func:`.kernels.scan_lanes`)."""
    seeded, inclusive = flags[0], flags[1]
    x, y = xs[0], ys[0]
    lanes, n = x.shape
    zero = ident[0]
    fill = zero  # what a lane shift brings in: the identity (float sums: -0.0)
    for lane in range(lanes):
        xr, yr = x[lane], y[lane]
        start = 0
        if seeded:
            carry = seeds[0][lane, 0]
        elif inclusive and n > 0:  # the first element starts the chain as it is
            carry = xr[0]
            yr[0] = carry
            start = 1
        else:
            carry = zero
        if inclusive:
            _lane(op, xr, yr, carry, fill, start, True)
        else:
            _lane(op, xr, yr, carry, fill, start, False)


scan_lanes_vector = njit(cache=True, nogil=True, error_model="numpy")(_scan_lanes_vector)
