"""The GPU backend's sort: Onesweep on the engine, its launcher and entry points.

:func:`sort_lanes` sorts the lanes (rows) of a 2-D tensor stably: one launch of
:func:`.triton_kernels.histogram_kernel` counts every digit pass's digits per lane,
the passes whose digit is the same for every key of every lane are dropped (the
table is read back once: int64 keys below 2^32 take 8 passes, not 16; keys below 8
with ``key_bits=3`` take 1), and each remaining pass is one launch of
:func:`.triton_kernels.digit_pass_kernel` on the engine, ping-ponging between two
buffers so that the last pass writes the result.  The payload moving with the keys
is the index in the lane for ``argsort`` (int32 while a lane has fewer than 2^31
keys, written as int64 by the last pass) or the values array itself when there is
one of at most 8 bytes an element; several values arrays (or complex128 ones)
follow the permutation afterwards (``torch.take_along_dim``).

``unique`` and ``run_length_encode`` select the heads of the runs of the sorted (or
given) keys in one pass of the engine's compaction kernel in its runs mode
(:func:`prefixscan.primitives.compaction.triton.run_fields`): each tile compares its
keys with the ones before and writes the kept values and the runs' lengths, with no
heads or positions arrays; the number of runs is read back once.

:func:`sort`, :func:`unique` and :func:`run_length_encode` are the backend's
entry points (:data:`prefixscan.primitives.sort.IMPLEMENTATIONS`).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from dataclasses import dataclass
from typing import Iterator

from ..._arrays import ArrayRef, as_torch
from ..._environment import interpreter_mode
from ...backends.triton.device.combine import combine_functions
from ...backends.triton.engine.state import single_pass, status_words
from ...backends.triton.runtime import launch as runtime
from ...backends.triton.planning.tiles import single_tile_block
from ...backends.triton.runtime.launch import Launch, current_stream
from ...monoid import BUILTIN_OPS
from ..compaction.triton import run_fields
from .checks import SortArgs, UniqueArgs
from .cpu import SortResult
from .keys import KeyCode, key_code
from .triton_kernels import DIGIT_BITS, MAX_BLOCK, RADIX, digit_pass_kernel, histogram_kernel

__all__ = ["SortTile", "RANKINGS", "INTERPRETER_TILE", "default_tile", "forced_tile", "sort_lanes", "sort", "unique", "run_length_encode"]


#: The digit pass's rankings (SortTile.rank).
RANKINGS = ("columns", "packed")


@dataclass(frozen=True)
class SortTile:
    """One program's work in a digit pass: ``block`` keys (a power of two, at most
    :data:`~.triton_kernels.MAX_BLOCK`), ``num_warps`` warps, ``window`` status rows
    (of 16 digit columns) read per look-back step, the ``rank`` of a key among the
    tile's keys of its digit by packed 8-bit counters scanned along chunks of 32 keys
    ("packed") or eight block-wide cumulative sums ("columns"); and the histogram's programs:
    ``hist_block`` keys at a time, ``hist_items`` blocks each."""

    block: int
    num_warps: int
    window: int = 2
    hist_block: int = 1024
    hist_items: int = 8
    rank: str = "packed"

    def __post_init__(self):
        if self.rank not in RANKINGS:
            raise ValueError(f"rank must be one of {', '.join(RANKINGS)}, got {self.rank!r}")
        for name in ("block", "window", "hist_block"):
            value = getattr(self, name)
            if value < 1 or value & (value - 1):
                raise ValueError(f"{name} must be a power of two, got {value}")
        if self.block > MAX_BLOCK:
            raise ValueError(f"block must be at most {MAX_BLOCK} (16-bit packed counters), got {self.block}")


#: The interpreter's tile: small, so that tests cross many tiles and look-back windows.
INTERPRETER_TILE = SortTile(block=32, num_warps=1, window=4, hist_block=32, hist_items=2)
#: The GPU's tile, measured on an H200 (docs/design/sort.md): 2048 keys on 8 warps ranked
#: by packed counters, a look-back window of 16 (80 registers for int32 keys, 3 tiles an
#: SM); a 2^28 int32 sort took 43 ms where the columns ranking's 1024-key tile took 74-79.
GPU_TILE = SortTile(block=2048, num_warps=8, window=16, rank="packed")


_forced: contextvars.ContextVar = contextvars.ContextVar("prefixscan_sort_tile", default=None)


@contextlib.contextmanager
def forced_tile(tile: SortTile) -> Iterator[None]:
    """Every GPU sort in the block runs with ``tile`` (benchmarks comparing tiles)."""
    if not isinstance(tile, SortTile):
        raise TypeError(f"tile must be a SortTile, got {type(tile).__name__}")
    token = _forced.set(tile)
    try:
        yield
    finally:
        _forced.reset(token)


def default_tile(interpreter: bool) -> SortTile:
    """The forced tile (:func:`forced_tile`), else the interpreter's or the GPU's."""
    return _forced.get() or (INTERPRETER_TILE if interpreter else GPU_TILE)


def _bits_view(t):
    """A tensor's elements as the signed integers of their width (bool as uint8)."""
    import torch

    if t.dtype == torch.bool:
        return t.view(torch.uint8)
    return t.view({1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def _key_constexpr(code: KeyCode) -> tuple:
    return (code.kind_index, code.width, code.mask, code.flip, code.inf_bits)


def _launch_histogram(bits, code: KeyCode, passes: int, tile: SortTile, interpreter: bool, stream):
    import torch

    lanes, L = bits.shape
    wide = L >= (1 << 31)
    hist = torch.zeros((lanes, passes, RADIX), dtype=torch.int64 if wide else torch.int32, device=bits.device)
    per_program = tile.hist_block * tile.hist_items
    spans = -(-L // per_program)
    runtime.launch_kernel(Launch(histogram_kernel, lanes * spans, 1 if interpreter else 4, stream, interpreter,
                                 (bits, hist, L, spans),
                                 dict(KEY=_key_constexpr(code), PASSES=passes, PB=1 << (passes - 1).bit_length(),
                                      BLOCK=tile.hist_block, ITEMS=tile.hist_items)))
    return hist


def _launch_pass(src, dst, pay_src, pay_dst, hist, code: KeyCode, p: int, passes: int, payload: int,
                 write_keys: bool, tile: SortTile, interpreter: bool, stream) -> None:
    import torch

    lanes, L = src.shape
    block = single_tile_block(L, tile.block)  # the tile's block, or a power of four for a one-tile lane
    tiles_per_lane = -(-L // block)
    single = tiles_per_lane == 1
    num_tiles = lanes * tiles_per_lane
    wide = L >= (1 << 31)
    acc = torch.int64 if wide else torch.int32
    pair, flat = combine_functions(BUILTIN_OPS["add"], 1)
    words = status_words((acc,), None)
    with single_pass(src.device, stream, num_tiles, num_tiles * RADIX, (acc,), words, single=single,
                     placeholder=hist) as status:
        args = ((src, dst, pay_src, pay_dst), status.buffers, status.counter, hist, L, tiles_per_lane,
                p * DIGIT_BITS, p, passes, status.tile_base, status.epoch)
        constexprs = dict(MONOID=(pair, flat, True), PROTOCOL=(words, tile.window, False), KEY=_key_constexpr(code),
                          TILE=(block, single, payload, write_keys, wide, RANKINGS.index(tile.rank)))
        runtime.launch_kernel(Launch(digit_pass_kernel, num_tiles, tile.num_warps, stream, interpreter, args,
                                     constexprs, (passes,)))


def sort_lanes(keys, code: KeyCode, *, payload=None, argsort: bool = False, write_keys: bool = True,
               tile: SortTile | None = None) -> tuple:
    """Sort each row of the contiguous 2-D tensor ``keys`` stably as ``code`` says.

    ``argsort``: the payload is each key's index in its row (int64 result); else
    ``payload`` (a tensor of keys' shape of at most 8 bytes an element, or None)
    moves with its key.  Returns ``(sorted keys or None, payload or None)``; reads
    the histogram back once (which passes to run)."""
    import torch

    lanes, L = keys.shape
    device = keys.device
    interpreter = interpreter_mode()
    tile = tile or default_tile(interpreter)
    stream = current_stream(device) if device.type == "cuda" else 0
    bits = _bits_view(keys)
    pay = _bits_view(payload) if payload is not None else None
    mode = 1 if argsort else (2 if payload is not None else 0)
    out_dtype = torch.int64 if argsort else (pay.dtype if pay is not None else None)
    if keys.numel() == 0:
        out_pay = torch.empty((lanes, L), dtype=out_dtype, device=device) if mode else None
        return (keys.clone() if write_keys else None), (out_pay.view(payload.dtype) if mode == 2 else out_pay)
    passes = code.passes(DIGIT_BITS)
    hist = _launch_histogram(bits, code, passes, tile, interpreter, stream)
    constant = (hist == L).any(-1).all(0).tolist()  # the one read back: which passes move nothing
    active = [p for p in range(passes) if not constant[p]]
    m = len(active)
    out = torch.empty_like(bits)
    out_pay = torch.empty((lanes, L), dtype=out_dtype, device=device) if mode else None
    if m == 0:  # every lane is one key repeated: already in order
        out.copy_(bits)
        if mode == 1:
            out_pay.copy_(torch.arange(L, device=device).expand(lanes, L))
        elif mode == 2:
            out_pay.copy_(pay)
    tmp = torch.empty_like(bits) if m > 1 else None
    step_dtype = (torch.int32 if L < (1 << 31) else torch.int64) if argsort else out_dtype
    tmp_pay = torch.empty((lanes, L), dtype=step_dtype, device=device) if mode and m > 1 else None
    dummy = out_pay if out_pay is not None else out
    for k, p in enumerate(active):
        to_out = (m - 1 - k) % 2 == 0  # the last pass writes ``out``
        if k == 0:
            src, pay_src = bits, (pay if mode == 2 else dummy)
        else:
            src, pay_src = (tmp, tmp_pay) if to_out else (out, out_pay)
        dst, pay_dst = (out, out_pay) if to_out else (tmp, tmp_pay)
        step = (1 if k == 0 else 2) if mode == 1 else mode
        _launch_pass(src, dst, pay_src if pay_src is not None else dummy, pay_dst if pay_dst is not None else dummy,
                     hist, code, p, passes, step, write_keys or k < m - 1, tile, interpreter, stream)
    result_pay = out_pay.view(payload.dtype) if mode == 2 else out_pay
    return (out.view(keys.dtype) if write_keys else None), result_pay


def _lanes_of(t, axis: int | None):
    """``t`` as a contiguous ``(lanes, length)`` tensor with ``axis`` last (None: one lane)."""
    if axis is None:
        return t.reshape(1, -1).contiguous()
    length = t.shape[axis]
    lanes = math.prod(t.shape[:axis] + t.shape[axis + 1:])
    return t.movedim(axis, -1).reshape(lanes, length).contiguous()


def _unlanes(r, shape: tuple, axis: int | None):
    if axis is None:
        return r.reshape(-1)
    moved = shape[:axis] + shape[axis + 1:] + (shape[axis],)
    return r.reshape(moved).movedim(-1, axis).contiguous()


def _direct_payload(t) -> bool:
    """Whether a values array moves with its keys (else it follows the permutation)."""
    return t.element_size() <= 8


def sort(args: SortArgs, *, want_keys: bool = True, want_index: bool = False) -> SortResult:
    """Sort ``args.keys`` along ``args.axis`` on the GPU (and the values with them)."""
    import torch

    x = as_torch(args.keys)
    shape = tuple(x.shape)
    keys = _lanes_of(x, args.axis)
    values = [_lanes_of(as_torch(v), args.axis) for v in args.values]
    index = None
    if len(values) == 1 and not want_index and _direct_payload(values[0]):
        sorted_keys, moved = sort_lanes(keys, args.code, payload=values[0], write_keys=want_keys)
        moved = [moved]
    else:
        sorted_keys, perm = sort_lanes(keys, args.code, argsort=want_index or bool(values), write_keys=want_keys)
        moved = [torch.take_along_dim(v, perm, dim=1) for v in values]
        index = perm if want_index else None
    return SortResult(_unlanes(sorted_keys, shape, args.axis) if sorted_keys is not None else None,
                      _unlanes(index, shape, args.axis) if index is not None else None,
                      tuple(_unlanes(v, shape, args.axis) for v in moved))


def run_length_encode(ref: ArrayRef) -> tuple:
    """``(values, counts)`` of the runs of 1-D ``ref`` (``==``: NaN never equal)."""
    import torch

    x = as_torch(ref).contiguous()
    if x.shape[0] == 0:
        return x.clone(), torch.zeros(0, dtype=torch.int64, device=x.device)
    (values,), counts = run_fields([x], equal_nan=False, lengths=True)
    return values, counts


def unique(args: UniqueArgs) -> tuple:
    """``(values, index, inverse, counts)`` as ``numpy.unique`` (NaNs one value),
    None for what was not asked for."""
    import torch

    x = as_torch(args.keys).contiguous()
    n = x.shape[0]
    need_perm = args.return_index or args.return_inverse
    code = key_code(args.keys.dtype)
    result = sort(SortArgs(args.keys, 0, code, (), False), want_keys=True, want_index=need_perm)
    s, perm = result.keys, result.index
    if n == 0:
        def empty():
            return torch.zeros(0, dtype=torch.int64, device=x.device)

        return s, (empty() if args.return_index else None), (empty() if args.return_inverse else None), \
            (empty() if args.return_counts else None)
    picked, counts = run_fields([s] + ([perm] if args.return_index else []), equal_nan=True,
                                lengths=args.return_counts or args.return_inverse)
    inverse = None
    if args.return_inverse:
        # The sorted keys' run numbers (each run's number repeated over its length), scattered to x's order.
        runs = torch.arange(counts.shape[0], device=x.device)
        inverse = torch.empty(n, dtype=torch.int64, device=x.device)
        inverse[perm] = torch.repeat_interleave(runs, counts, output_size=n)
    return picked[0], (picked[1] if args.return_index else None), inverse, (counts if args.return_counts else None)
