"""The compiled CPU pass of the segmented scan (Numba): its driver (host arrays in,
NumPy arrays out, arguments checked by the public API) and its two kernels.

Segmented scans restart the carry at each head: by offsets, segment by segment
(no per-element test); by flags or keys, with a select instead of a branch so
random heads cost no mispredictions (the operator lifted to (flag, value) pairs
of Schwartz 1980 / Blelloch 1990, section 1.5, run serially).  A user's combine
compiles through :mod:`prefixscan.backends.cpu.compiled.monoids`; one Numba
cannot type makes the driver return None (the caller's NumPy path runs).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.core.errors import NumbaError

from ...backends.cpu.compiled import monoids
from ...backends.cpu.compiled.jit_support import HALF, PLAIN, combine, load1, store1, to_acc
from ...backends.cpu.compiled.launch import call
from ...backends.cpu.compiled.views import host_array, to_storage
from ...monoid import accumulator_dtype_name, resolve_op

__all__ = ["segmented_scan", "segmented_offsets", "segmented_heads"]


def _segmented_offsets(xs, ys, op, fmts, ident, seed, seeded, starts, inclusive, reverse):
    """Segments ``[starts[i], starts[i+1])`` (the last one ends at n), each started
    from ``seed`` (``seeded`` False: the identity, never combined)."""
    fin, facc, fout = fmts[0], fmts[1], fmts[2]
    n = xs[0].shape[0]
    count = starts.shape[0]
    for seg in range(count):
        a = starts[seg]
        b = starts[seg + 1] if seg + 1 < count else n
        state = seed
        for t in range(b - a):
            i = b - 1 - t if reverse else a + t
            v = to_acc(load1(xs, fin, i), ident, facc)
            if t == 0 and inclusive and not seeded:
                nxt = v
            else:
                nxt = to_acc(combine(op, state, v), ident, facc)
            store1(ys, fout, nxt if inclusive else state, i)
            state = nxt


def _segmented_heads(xs, ys, op, fmts, ident, seed, seeded, heads, by_keys, inclusive, reverse):
    """Heads from a bool array (``by_keys`` False) or where a key differs from the one
    before; each segment starts from ``seed`` (``seeded`` False: the identity)."""
    fin, facc, fout = fmts[0], fmts[1], fmts[2]
    n = xs[0].shape[0]
    state = ident
    for t in range(n):
        i = n - 1 - t if reverse else t
        # The element that starts this (possibly reversed) segment.
        j = i + 1 if reverse else i
        if j == 0 or j == n:
            head = True
        elif by_keys:
            head = heads[j] != heads[j - 1]
        else:
            head = heads[j] != 0
        v = to_acc(load1(xs, fin, i), ident, facc)
        merged = to_acc(combine(op, state, v), ident, facc)
        carried = seed if head else state
        if head:
            nxt = to_acc(combine(op, seed, v), ident, facc) if seeded else v
        else:
            nxt = merged
        store1(ys, fout, nxt if inclusive else carried, i)
        state = nxt


segmented_offsets = njit(cache=True, nogil=True, error_model="numpy")(_segmented_offsets)
segmented_heads = njit(cache=True, nogil=True, error_model="numpy")(_segmented_heads)
segmented_offsets_user = njit(nogil=True, error_model="numpy")(_segmented_offsets)
segmented_heads_user = njit(nogil=True, error_model="numpy")(_segmented_heads)


def segmented_scan(x, op="add", *, flags=None, offsets=None, keys=None, inclusive=True, reverse=False, init=None):
    struct = isinstance(x, tuple)
    arrays = [np.ascontiguousarray(host_array(v)) for v in (x if struct else (x,))]
    monoid = resolve_op(op)
    found = monoids.operator_for(monoid, len(arrays), reverse)
    if found is None:
        return None
    op_value, user = found
    n = arrays[0].shape[0]
    accs = [accumulator_dtype_name(a.dtype.name) for a in arrays]
    acc_np = [np.dtype("float32" if name == "float16" else name) for name in accs]
    ident = tuple(dt.type(v) for dt, v in
                  zip(acc_np, monoid.identity_values([np.dtype(name) for name in accs])))
    if any(name == "float16" for name in accs):  # an identity on the float16 grid
        ident = tuple(np.float32(np.float16(v)) if name == "float16" else v for v, name in zip(ident, accs))
    seed = ident if init is None else tuple(dt.type(np.asarray(v).astype(dt)) for dt, v in zip(acc_np, init))
    xs, fin = zip(*(to_storage(a) for a in arrays))
    outs = [np.empty(n, a.dtype) for a in arrays]
    ys = tuple(to_storage(y)[0] for y in outs)
    facc = tuple(HALF if name == "float16" else PLAIN for name in accs)
    fmts = (tuple(fin), facc, tuple(fin))
    try:
        if n:
            if offsets is not None:
                starts = np.ascontiguousarray(host_array(offsets), dtype=np.int64)
                kernel = segmented_offsets_user if user else segmented_offsets
                call(kernel, tuple(xs), ys, op_value, fmts, ident, seed, init is not None, starts, inclusive, reverse)
            else:
                by_keys = keys is not None
                heads = np.ascontiguousarray(host_array(keys if by_keys else flags))
                if heads.dtype == np.float16:
                    heads = heads.astype(np.float32)
                kernel = segmented_heads_user if user else segmented_heads
                call(kernel, tuple(xs), ys, op_value, fmts, ident, seed, init is not None, heads, by_keys, inclusive,
                     reverse)
    except NumbaError:  # a user combine Numba cannot type
        if not user:
            raise
        monoids.mark_failed(monoid, len(arrays), reverse)
        return None
    return tuple(outs) if struct else outs[0]
