"""Scans of a sequence held in pieces: reduce every piece, combine the totals into
carries, scan every piece seeded with its carry.

A sequence cut into pieces (the chunks of a dask array, the shards of the
ranks of a process group) is scanned in three steps, the reduce-then-scan
structure of Merrill & Grimshaw 2009 ("Parallel scan for stream
architectures") and of Blelloch 1990 ("Prefix sums and their applications",
section 1.2):

1. every piece is reduced to its total (:func:`piece_totals`; one read);
2. the totals, small, are scanned exclusively into each piece's carry
   (:func:`piece_carries`, :func:`combine_totals`), seeded with ``init``;
3. every piece is scanned with its carry as ``init`` (:func:`scan_piece`; one
   read, one write).

Orders: ``order=q`` applies the scan q times, so a piece's state is q carries,
one per pass.  Pass p's carry into piece k combines pass p's inputs over the
pieces before k, and those inputs are pass p-1's outputs, which depend on pass
p-1's carries: the totals of pass p are taken once the carries of passes
``1 .. p-1`` are known, one round per pass (as the GPU's general kernels run
one look-back per order; docs/design/orders.md).  A piece seeded the same way
in every pass (the first piece: ``init`` or nothing) scans in one call.

Tuple sizes: element i of a lane belongs to stream ``i mod s`` of the whole
sequence, so a piece starting at offset o holds its local stream m in global
stream ``(o + m) mod s``: totals are rotated into global stream order and
carries back, and a piece whose length is not a multiple of s is padded with
the identity where its scan ends (one copy of that piece) and reduced with its
last, partial row folded in separately.

Totals and carries live on the host as NumPy arrays (a lane's worth of
values), where any monoid's ``combine`` runs; the backends take host seeds for
device arrays.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np

from ..._normalize import build_request
from ..._request import ScanConfig, ScanRequest, np_dtype
from .routing import is_torch_tensor
from .runner import run_scan
from .reduction import reduce_request

__all__ = ["PiecewiseScan", "piece_totals", "piece_carries", "combine_totals", "scan_piece",
           "to_host", "seed_of"]

Fields = tuple  # one array per field of the monoid (a 1-tuple for a plain scan)


@dataclass(frozen=True)
class PiecewiseScan:
    """What every piece of one scan shares (picklable: it travels to dask workers)."""

    config: ScanConfig  # its axis is the pieces' scanned axis (an int)
    acc_dtypes: tuple  # accumulator dtype names, one per field
    out_dtypes: tuple  # result dtype names, one per field
    identity: tuple  # the identity, one 0-d NumPy array per field (accumulator dtypes)
    struct: bool  # x is a tuple of fields

    @classmethod
    def from_request(cls, request: ScanRequest, axis: int) -> "PiecewiseScan":
        """The plan of a checked request whose pieces are cut along ``axis``."""
        return cls(replace(request.config, axis=axis), request.acc_dtypes, request.out_dtypes,
                   request.identity, request.struct)

    @property
    def rounds(self) -> int:
        """How many rounds of totals the carries need: one per pass."""
        return self.config.order


def to_host(value: Any) -> np.ndarray:
    """A small array (a total, a carry) as a NumPy array on the host."""
    if is_torch_tensor(value):
        return value.detach().cpu().numpy()
    if type(value).__module__.startswith("cupy"):
        return value.get()
    return np.asarray(value)


def seed_of(plan: PiecewiseScan, init: Any, lanes_shape: tuple) -> Fields | None:
    """The checked ``init`` (one value per field, shaped as scan's ``init``) as host
    carries of shape lanes + ``(s,)`` in the accumulator dtypes; None without init."""
    if init is None:
        return None
    s = plan.config.tuple_size
    values = (to_host(v).astype(np_dtype(acc)) for v, acc in zip(init, plan.acc_dtypes))
    # Scan's init has no stream axis when s == 1; carries always do.
    return tuple(np.array(np.broadcast_to(v if s > 1 else v[..., None], lanes_shape + (s,))) for v in values)


def combine_totals(plan: PiecewiseScan, left: Fields | None, right: Fields | None) -> Fields | None:
    """``left ⊕ right`` of host totals, ``left`` holding the earlier elements; None
    stands for the identity (nothing to combine)."""
    if left is None or right is None:
        return right if left is None else left
    monoid = plan.config.monoid
    with np.errstate(**monoid.numpy_errstate):
        if len(left) == 1:
            merged = (monoid.combine(left[0], right[0]),)
        else:
            merged = tuple(monoid.combine(tuple(left), tuple(right)))
    return tuple(np.asarray(v, dtype=np_dtype(acc)) for v, acc in zip(merged, plan.acc_dtypes))


def piece_carries(plan: PiecewiseScan, totals: Sequence[Fields | None], seed: Fields | None) -> list:
    """The exclusive scan of consecutive pieces' totals: each piece's carry,
    ``seed ⊕ T[0] ⊕ ... ⊕ T[k-1]``, or ``T[k+1] ⊕ ... ⊕ T[-1] ⊕ seed`` for a
    reverse scan (the seed at the far end).  None where nothing is carried."""
    carries: list = [None] * len(totals)
    acc = seed
    reverse = plan.config.reverse
    for k in (range(len(totals) - 1, -1, -1) if reverse else range(len(totals))):
        carries[k] = acc
        acc = combine_totals(plan, totals[k], acc) if reverse else combine_totals(plan, acc, totals[k])
    return carries


def _length(plan: PiecewiseScan, fields: Fields) -> int:
    return fields[0].shape[plan.config.axis]


def _take(a: Any, axis: int, start: int, stop: int) -> Any:
    return a[(slice(None),) * axis + (slice(start, stop),)]


def _concat(a: Any, b: Any, axis: int) -> Any:
    if is_torch_tensor(a):
        import torch  # a is a tensor

        return torch.cat([a, b], dim=axis)
    return np.concatenate([a, b], axis=axis)


def _filled(like: Any, value: np.ndarray, shape: tuple) -> Any:
    """An array of ``like``'s type, dtype and device, of ``shape``, filled with ``value``."""
    if is_torch_tensor(like):
        import torch  # like is a tensor

        return torch.full(shape, value.item(), dtype=like.dtype, device=like.device)
    return np.full_like(like, value, shape=shape)


def _padded(plan: PiecewiseScan, fields: Fields, offset: int) -> tuple[Fields, int, int]:
    """The fields padded with the identity to a multiple of the tuple size, the
    pad's length and the padded piece's offset.  The pad goes where the scan ends
    (the end, or the start of a reverse scan), so that no pass carries its
    values into the piece's own elements."""
    s, axis, reverse = plan.config.tuple_size, plan.config.axis, plan.config.reverse
    pad = -_length(plan, fields) % s
    if not pad:
        return fields, 0, offset
    shape = list(fields[0].shape)
    shape[axis] = pad
    fills = [_filled(f, e, tuple(shape)) for f, e in zip(fields, plan.identity)]
    if reverse:
        return tuple(_concat(p, f, axis) for f, p in zip(fields, fills)), pad, offset - pad
    return tuple(_concat(f, p, axis) for f, p in zip(fields, fills)), pad, offset


def _unpadded(plan: PiecewiseScan, results: Fields, pad: int, m: int) -> Fields:
    if not pad:
        return results
    start = pad if plan.config.reverse else 0
    return tuple(_take(r, plan.config.axis, start, start + m) for r in results)


def _local_seed(plan: PiecewiseScan, carry: Fields | None, offset: int) -> Fields | None:
    """Carries (lanes + (s,), streams in the sequence's order) as the ``init`` of a
    piece starting at ``offset``: rotated to its local streams, no stream axis when s == 1."""
    s = plan.config.tuple_size
    if carry is None:
        return None
    if s == 1:
        return tuple(c[..., 0] for c in carry)
    phase = offset % s
    return tuple(np.roll(c, -phase, axis=-1) for c in carry) if phase else carry


def _run(plan: PiecewiseScan, config: ScanConfig, fields: Fields, seed: Fields | None) -> Fields:
    x = fields if plan.struct else fields[0]
    result = run_scan(config, x, seed if plan.struct or seed is None else seed[0])
    return tuple(result) if plan.struct else (result,)


def _passes(plan: PiecewiseScan, fields: Fields, offset: int, carries: Sequence) -> Fields:
    """Passes ``1 .. len(carries)`` of the scan over a piece padded to whole tuples,
    pass p seeded with ``carries[p-1]``: one call when every pass has the same seed,
    else one call per pass, in the accumulator dtype."""
    config = plan.config
    if all(c is carries[0] for c in carries):
        return _run(plan, replace(config, order=len(carries)), fields, _local_seed(plan, carries[0], offset))
    # Separate passes keep the accumulator dtype between them (one rounding at the end).
    config = replace(config, order=1, dtype=config.dtype if plan.struct else plan.acc_dtypes[0])
    for carry in carries:
        fields = _run(plan, config, fields, _local_seed(plan, carry, offset))
    return fields


def scan_piece(plan: PiecewiseScan, fields: Fields, *, offset: int, carries: Sequence) -> Fields:
    """The scan of one piece that starts at ``offset`` of its sequence, pass p
    seeded with ``carries[p-1]`` (``plan.rounds`` entries, None for no seed);
    one array per field, in the result dtypes."""
    padded, pad, start = _padded(plan, fields, offset)
    result = _unpadded(plan, _passes(plan, padded, start, carries), pad, _length(plan, fields))
    return tuple(r if str(r.dtype).replace("torch.", "") == out else _cast(r, out)
                 for r, out in zip(result, plan.out_dtypes))


def _cast(a: Any, dtype: str) -> Any:
    if is_torch_tensor(a):
        import torch  # a is a tensor

        return a.to(getattr(torch, dtype))
    return a.astype(dtype)


def piece_totals(plan: PiecewiseScan, fields: Fields, *, offset: int, lower: Sequence = ()) -> Fields:
    """The total of one piece for round ``len(lower) + 1``: the reduction of its
    pass-``len(lower) + 1`` input, which is the output of passes ``1 .. len(lower)``
    seeded with ``lower``.  Host arrays of shape lanes + ``(s,)`` (streams in the
    sequence's order), in the accumulator dtypes."""
    config = plan.config
    if lower:
        padded, pad, start = _padded(plan, fields, offset)
        fields = _unpadded(plan, _passes(plan, padded, start, lower), pad, _length(plan, fields))
    s, axis, m = config.tuple_size, config.axis, _length(plan, fields)
    whole = m - m % s
    main = tuple(_take(f, axis, 0, whole) for f in fields) if whole != m else fields
    totals = _reduce(plan, main)
    if whole != m:  # the last, partial row: streams 0 .. m % s - 1 end one element later
        tail = tuple(np.moveaxis(to_host(_take(f, axis, whole, m)), axis, -1).astype(np_dtype(acc))
                     for f, acc in zip(fields, plan.acc_dtypes))
        head = tuple(t[..., : m % s] for t in totals)
        merged = combine_totals(plan, head, tail)
        totals = tuple(np.concatenate([h, t[..., m % s:]], axis=-1) for h, t in zip(merged, totals))
    phase = offset % s
    return tuple(np.roll(t, phase, axis=-1) for t in totals) if phase else totals


def _reduce(plan: PiecewiseScan, fields: Fields) -> Fields:
    """Host totals, shape lanes + (s,), of a piece of whole tuples."""
    config = replace(plan.config, inclusive=True, reverse=False, order=1)
    request = build_request(config, fields if plan.struct else fields[0], None, None)
    totals = tuple(to_host(t) for t in reduce_request(request))
    return totals if config.tuple_size > 1 else tuple(t[..., None] for t in totals)

