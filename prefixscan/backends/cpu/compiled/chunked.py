"""Order-q sums of 32-bit integers with eight chunks of a lane in the lanes of a vector.

An order-q scan passes each element through q running states: q adds per
element, and on the scalar kernel (:func:`.kernels.scan_lanes_orders`) four
integer ALUs make that two cycles per element for q = 8, a third of the copy's
speed.  The adds of one stream depend on each other, so to vectorise them the
lane is cut into blocks of eight chunks of ``CHUNK`` elements, one chunk per
vector lane (the vertical scheme of Zhang, Wang & Ross 2020, "Parallel Prefix
Sum with SIMD", section 3, carried to q orders):

1. every chunk's chain runs from zero states, eight chunks at a time: each step
   loads eight elements of each chunk and transposes the 8x8 tile in registers,
   so that one vector holds one element of every chunk; only the chunks' end
   states are kept;
2. each chunk's true start states follow from its predecessor's: ``L`` steps of
   the chain without input map states ``s`` to ``M s`` with ``M[k][j] =
   C(L + k - j - 1, k - j)`` (the carry of orders; the ``M`` of one step is the
   lower triangle of ones, raised to the ``L``-th power by squaring), so
   ``start[c + 1] = M start[c] + end[c]``, exactly in wrapping integer arithmetic;
3. the chains run again from the true start states and the tile is transposed
   back and stored.

Measured on the 2-core CI machine (10^7 int32, order 8): 0.49-0.55 of the copy
against 0.32-0.35 for the scalar kernel; the two passes' adds and shuffles
(0.44 ns per element with the block in L2) bound it below the copy's 0.26 ns
(docs/design/cpu_compiled.md).  Used for inclusive, unseeded, forward scans of
C-contiguous int32/uint32 lanes of at least one block, orders 4 to 8.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic, register_jitable

from .jit_support import PLAIN, Tag

__all__ = ["LANES", "CHUNK", "BLOCK", "supports", "scan_lanes_orders_chunked"]

LANES = 8
# Elements per chunk: a multiple of LANES whose byte stride is not a multiple of
# 4 KiB (the chunks' loads and stores would alias in the store buffer); a block
# of eight chunks (256 KiB of int32) stays in L2 between the two passes.
CHUNK = 8200
BLOCK = LANES * CHUNK
MIN_ORDER, MAX_ORDER = 4, 8


def supports(op, x: np.ndarray, y: np.ndarray, identity: tuple, fmts: tuple, order: int, flags: tuple) -> bool:
    """Whether :func:`scan_lanes_orders_chunked` runs this scan of ``(lanes, n)`` views."""
    seeded, inclusive, reverse = flags
    return (isinstance(op, Tag) and op.name == "op_add" and len(identity) == 1
            and x.dtype in (np.int32, np.uint32) and x.dtype == y.dtype == np.asarray(identity[0]).dtype
            and MIN_ORDER <= order <= MAX_ORDER and inclusive and not seeded and not reverse
            and x.shape[1] >= BLOCK and x.flags.c_contiguous and y.flags.c_contiguous
            and all(f is PLAIN for group in fmts for f in group))


def _transpose(builder, rows: list, mask_type) -> list:
    """An 8x8 tile in eight 8-lane vectors, transposed: three interleaving stages
    (32-bit pairs, 64-bit pairs, 128-bit halves)."""
    def shuffle(a, b, mask):
        return builder.shuffle_vector(a, b, ir.Constant(mask_type, mask))

    pairs = []
    for i in range(0, LANES, 2):
        pairs.append(shuffle(rows[i], rows[i + 1], [0, 8, 1, 9, 4, 12, 5, 13]))
        pairs.append(shuffle(rows[i], rows[i + 1], [2, 10, 3, 11, 6, 14, 7, 15]))
    quads = []
    for i in (0, 4):
        for h in (0, 1):
            quads.append(shuffle(pairs[i + h], pairs[i + 2 + h], [0, 1, 8, 9, 4, 5, 12, 13]))
            quads.append(shuffle(pairs[i + h], pairs[i + 2 + h], [2, 3, 10, 11, 6, 7, 14, 15]))
    out = [None] * LANES
    for k in range(4):
        out[k] = shuffle(quads[k], quads[4 + k], [0, 1, 2, 3, 8, 9, 10, 11])
        out[k + 4] = shuffle(quads[k], quads[4 + k], [4, 5, 6, 7, 12, 13, 14, 15])
    return out


@intrinsic(prefer_literal=True)
def chunk_chains(typingctx, x, y, base, states, order, write):
    """The chains of the eight chunks ``x[base + c*CHUNK:][:CHUNK]``, lane c starting
    from ``states[:, c]`` (an ``(order, LANES)`` array, overwritten with the end
    states); with ``write``, the last chain's values go to ``y`` at the same places."""
    if not isinstance(order, types.IntegerLiteral) or not isinstance(write, types.BooleanLiteral):
        return None
    q, store = order.literal_value, write.literal_value

    def codegen(context, builder, signature, args):
        xv, yv, start, sv = args[:4]
        xa = context.make_array(signature.args[0])(context, builder, xv)
        ya = context.make_array(signature.args[1])(context, builder, yv)
        sa = context.make_array(signature.args[3])(context, builder, sv)
        vector = ir.VectorType(context.get_value_type(signature.args[0].dtype), LANES)
        pointer = vector.as_pointer()
        mask_type = ir.VectorType(ir.IntType(32), LANES)
        index = start.type

        def at(data, offset):
            return builder.bitcast(builder.gep(data, [offset]), pointer)

        slots = []  # the states, promoted to registers by LLVM
        for k in range(q):
            slot = cgutils.alloca_once(builder, vector)
            builder.store(builder.load(at(sa.data, ir.Constant(index, k * LANES)), align=1), slot)
            slots.append(slot)
        with cgutils.for_range(builder, ir.Constant(index, CHUNK // LANES)) as loop:
            first = builder.add(start, builder.mul(loop.index, ir.Constant(index, LANES)))
            offsets = [builder.add(first, ir.Constant(index, c * CHUNK)) for c in range(LANES)]
            rows = [builder.load(at(xa.data, offset), align=1) for offset in offsets]
            states = [builder.load(slot) for slot in slots]
            values = []
            for column in _transpose(builder, rows, mask_type):
                for k in range(q):
                    states[k] = builder.add(states[k], column)
                    column = states[k]
                values.append(column)
            for slot, state in zip(slots, states):
                builder.store(state, slot)
            if store:
                for offset, row in zip(offsets, _transpose(builder, values, mask_type)):
                    builder.store(row, at(ya.data, offset), align=1)
        for k in range(q):
            builder.store(builder.load(slots[k]), at(sa.data, ir.Constant(index, k * LANES)), align=1)
        return context.get_dummy_value()

    return types.none(x, y, base, states, order, write), codegen


@register_jitable
def _matmul(a, b):
    q = a.shape[0]
    c = np.zeros_like(a)
    for i in range(q):
        for j in range(q):
            acc = 0
            for k in range(q):
                acc += a[i, k] * b[k, j]
            c[i, j] = acc
    return c


@register_jitable
def _chunk_map(q, length):
    """``M`` of ``length`` input-free steps of an order-q chain, mod 2^64: the one-step
    map (each state adds the ones below it) to the ``length``-th power."""
    step = np.zeros((q, q), np.int64)
    for k in range(q):
        for j in range(k + 1):
            step[k, j] = 1
    result = np.eye(q, dtype=np.int64)
    e = length
    while e:
        if e & 1:
            result = _matmul(result, step)
        step = _matmul(step, step)
        e >>= 1
    return result


def _scan_lanes_orders_chunked(xs, ys, op, fmts, ident, seeds, flags, order):
    """:func:`.kernels.scan_lanes_orders` for the scans :func:`supports` admits."""
    x, y = xs[0], ys[0]
    lanes, n = x.shape
    chunk_map = _chunk_map(order, CHUNK).astype(x.dtype)  # wraps as the dtype's arithmetic does
    carried = np.zeros(order, x.dtype)
    start = np.zeros(order, x.dtype)
    following = np.zeros(order, x.dtype)
    ends = np.zeros((order, LANES), x.dtype)
    starts = np.zeros((order, LANES), x.dtype)
    blocks = n // BLOCK
    for lane in range(lanes):
        xr, yr = x[lane], y[lane]
        carried[:] = 0
        for b in range(blocks):
            base = b * BLOCK
            ends[:, :] = 0
            chunk_chains(xr, yr, base, ends, order, False)
            start[:] = carried
            for c in range(LANES):
                for k in range(order):
                    starts[k, c] = start[k]
                for k in range(order):
                    acc = ends[k, c]
                    for j in range(k + 1):
                        acc += chunk_map[k, j] * start[j]
                    following[k] = acc
                start[:] = following
            carried[:] = start
            chunk_chains(xr, yr, base, starts, order, True)
        for i in range(blocks * BLOCK, n):  # the tail: the scalar chain
            v = xr[i]
            for k in range(order):
                carried[k] += v
                v = carried[k]
            yr[i] = v


scan_lanes_orders_chunked = njit(cache=True, nogil=True, error_model="numpy")(_scan_lanes_orders_chunked)
