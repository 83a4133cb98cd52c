"""Tile configurations of the look-back kernels and their defaults per key.

A tile is what one program scans: ``block`` elements (rows x column block for
the 2-D kernel), ``num_warps`` warps, a look-back window of ``window`` status
words per step (Merrill & Garland 2016, section 4), an optional raking row
length (Merrill & Grimshaw 2009's SRTS) and a register cap expressed as
resident tiles per SM.  The defaults below were measured, not modelled, as SAM
(Maleki et al. 2016) and Merrill & Grimshaw tune theirs: per key, the tile best
across the GPUs whose tuned tables ship with the package, so that a key no
table covers still runs a good tile; a tuned table (:mod:`..tuner`, read through :mod:`.sources`) replaces
them per GPU.  In the interpreter tiles are tiny so that multi-tile look-back
paths run on small inputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

__all__ = ["TileConfig", "INTERPRETER_TILE", "SIZE_BUCKETS", "size_bucket", "default_config", "single_tile_block",
           "LaneTiles", "lane_tiles", "register_cap", "raking_rows", "REGISTERS_PER_SM", "MAX_REGISTERS_PER_THREAD"]


@dataclass(frozen=True)
class TileConfig:
    block: int  # elements per tile (rows * KB for the 2-D kernel)
    num_warps: int
    window: int  # status words read per look-back step (predecessors: window // words per entry)
    max_kb: int = 32  # widest column block of the 2-D kernel
    packed: bool | None = None  # status as tagged words (launch.status_words); None: when <= 4 words
    # In-tile scan: 0 for tl.associative_scan, else raking with rows of this many
    # elements (a power of two; Merrill & Grimshaw's SRTS, see kernels._raking_scan).
    raking: int = 0
    # Tiles resident per SM to cap registers for (maxnreg = registers per SM over
    # the tile's threads); 0 leaves registers to the compiler.  A look-back tile
    # holds its registers while it waits on L2, so resident tiles hide that wait:
    # ptxas gives the float64 tile 168 registers (3 tiles of 4 warps per SM) where
    # the int64 one gets 128 (4 tiles), tools/occupancy_report.py.
    occupancy: int = 0


INTERPRETER_TILE = TileConfig(block=32, num_warps=1, window=4, max_kb=4)

#: Size buckets of the elements per lane, M * K: (name, largest log2 size in it or
#: None, log2 size it is tuned at).  A tuned table has one entry per bucket
#: (:mod:`.keys`), and so do the defaults below.
SIZE_BUCKETS = (("n<=2^16", 16, 16), ("2^17-2^21", 21, 20), ("2^22-2^25", 25, 24), ("n>=2^26", None, 26))


def size_bucket(n: int) -> str:
    """The size bucket of ``n`` elements per lane (a log2 range, never n itself)."""
    e = max(int(n) - 1, 0).bit_length()  # n <= 2^e
    for name, top, _ in SIZE_BUCKETS:
        if top is None or e <= top:
            return name
    raise AssertionError("unreachable")


def _tiles(*specs) -> dict:
    return {bucket: TileConfig(*spec) for (bucket, _, _), spec in zip(SIZE_BUCKETS, specs)}


# The default tile of a key (accumulator bytes, float or not, layout, size bucket):
# the decoupled look-back tile that is best across the GPUs we have tuned, derived
# from the shipped tables (planning/tables/: one full `prefixscan tune` each on an
# H100 80GB HBM3, 2026-11-25, and an H200, 2026-11-26) by tuner.ship.derive_defaults:
# among the uncapped look-back tiles measured on both, the one whose worse ratio to
# that GPU's fastest measured choice is lowest (ties within 1%: the one measured more
# often).  Ratios H100/H200 (1.000: the fastest measured there):
#
#   key           n <= 2^16             2^17-2^21             2^22-2^25             >= 2^26
#   4B int   1d   4096x4    1.045/1.004 8192x4    1.017/1.028 8192x4    1.007/1.004 8192x4    1.000/1.015
#   4B int   2d   16384x4   2.080/2.005 4096x8w64 1.024/1.007 4096x4    1.001/1.007 4096x4    1.001/1.001
#   4B float 1d   2048x4    1.019/1.019 8192x4r64 1.009/1.000 4096x4r32 1.000/1.031 8192x4    1.007/1.033
#   4B float 2d   4096x8r16 1.012/1.015 8192x8w64 1.000/1.000 4096x4    1.006/1.050 8192x4    1.012/1.079
#   8B int   1d   2048x8    1.011/1.000 4096x4    1.001/1.014 4096x4    1.000/1.000 4096x4    1.000/1.000
#   8B int   2d   4096x4    1.450/1.308 32768x16  1.009/1.011 8192x4    1.001/1.003 4096x8    1.002/1.004
#   8B float 1d   4096x8    1.034/1.022 8192x4    1.000/1.000 4096x4    1.038/1.061 4096x4    1.044/1.083
#   8B float 2d   8192x4    1.000c/1.101 8192x4   1.000c/1.000 8192x4   1.000c/1.000 8192x4   1.000c/1.000
#
# (BLOCKxWARPS, window 32 unless wN, raking rows rN.)  Ratios over 1.02 at n >= 2^22
# are keys whose fastest is a register-capped tile (3-5 per SM): the defaults have
# no caps, which spill on some tiles (docs/design/lookback.md), so a capped choice
# comes from a table.  (c) the H100's tune ran out of budget on these keys (3-21 of
# about 28 candidates measured), so its 1.000 says little.  At n <= 2^21 a call
# takes a few microseconds, mostly the host's: the 2-D n <= 2^16 winners are
# chained tiles (these are the look-back tiles).  The per-dtype defaults these
# replace (16384x4 int32, 8192x4 float32, 4096x8 int64, 8192x4 float64, measured
# on the H100 at 2^27-2^28) were up to 1.83x slower than the best (int64 2-D at
# 2^26 on the H200).  The 2-D keys are measured at 4 interleaved streams and serve
# any number: 8B int 2d >= 2^26 tied across its tiles there, and 4096x8 served 32
# streams (int64 tuple size 32) at half the speed of 8192x4 on the H200, whose
# table entry was set to 8192x4 by hand.  After a shipped table changes,
# `python -m prefixscan.backends.triton.tuner.ship derive` prints this again
# (tests/backends/triton/tuner/test_shipped.py checks that the two agree).
_DEFAULTS = {
    (4, False, "1d"): _tiles((4096, 4, 32), (8192, 4, 32), (8192, 4, 32), (8192, 4, 32)),
    (4, False, "2d"): _tiles((16384, 4, 32), (4096, 8, 64), (4096, 4, 32), (4096, 4, 32)),
    (4, True, "1d"): _tiles((2048, 4, 32), (8192, 4, 32, 32, None, 64), (4096, 4, 32, 32, None, 32), (8192, 4, 32)),
    (4, True, "2d"): _tiles((4096, 8, 32, 32, None, 16), (8192, 8, 64), (4096, 4, 32), (8192, 4, 32)),
    (8, False, "1d"): _tiles((2048, 8, 32), (4096, 4, 32), (4096, 4, 32), (4096, 4, 32)),
    (8, False, "2d"): _tiles((4096, 4, 32), (32768, 16, 32), (8192, 4, 32), (4096, 8, 32)),
    (8, True, "1d"): _tiles((4096, 8, 32), (8192, 4, 32), (4096, 4, 32), (4096, 4, 32)),
    (8, True, "2d"): _tiles((8192, 4, 32), (8192, 4, 32), (8192, 4, 32), (8192, 4, 32)),
}
# Element sizes not measured: 1- and 2-byte integers get the hand-measured 4-byte
# tile scaled to about 64 KB per tile; any other size (several fields) the 8-byte one.
_FALLBACK = {1: TileConfig(16384, 4, 32), 2: TileConfig(16384, 4, 32)}


def default_config(itemsize: int, floating: bool, K: int = 1, n: int | None = None) -> TileConfig:
    """The default tile of a key without a tuned entry: ``itemsize`` accumulator
    bytes (summed over the fields), float or not, ``K`` interleaved streams (1: the
    1-D layout) and ``n`` elements per lane (None: the largest size bucket)."""
    if itemsize in _FALLBACK:
        return _FALLBACK[itemsize]
    layout = "1d" if K == 1 else "2d"
    per_bucket = _DEFAULTS.get((itemsize, floating, layout)) or _DEFAULTS[(8, floating, layout)]
    return per_bucket[size_bucket(n) if n is not None else SIZE_BUCKETS[-1][0]]


def single_tile_block(length: int, block: int) -> int:
    """The tile of a lane of ``length`` <= ``block`` elements scanned by one program:
    the least power of four (at least 16) that holds it, at most ``block``.  Each tile
    is a compiled variant, and a tile up to four times the lane costs a one-program
    launch nothing measurable; powers of two compiled a variant per octave, so that a
    stream of lengths between 10^3 and 2 * 10^5 compiled two single-tile variants where
    lengths from 16 to 2^16 compiled thirteen."""
    tile = 16
    while tile < length:
        tile *= 4
    return min(tile, block)


class LaneTiles(NamedTuple):
    """How a lane is cut into 1-D tiles: ``tiles`` tiles of ``block`` elements (one,
    ``single``, when the lane fits in the config's block), raking rows ``rake``."""

    block: int
    single: bool
    tiles: int
    rake: int


def lane_tiles(config: TileConfig, length: int) -> LaneTiles:
    """The 1-D tiles of a lane of ``length`` elements on ``config``: one program of
    :func:`single_tile_block` elements when the lane fits in ``config.block``, else
    ``ceil(length / block)`` tiles of ``config.block``.  The look-back launcher and the
    ahead-of-time loader both cut lanes with this function, so that they launch the
    same variant."""
    single = length <= config.block
    block = single_tile_block(length, config.block) if single else config.block
    tiles = 1 if single else -(-length // block)
    return LaneTiles(block, single, tiles, raking_rows(config, block))


#: Registers per SM on the GPUs tuned for (sm_70 to sm_90) and the cap ptxas accepts per thread.
REGISTERS_PER_SM = 65536
MAX_REGISTERS_PER_THREAD = 255


def register_cap(config: TileConfig) -> int | None:
    """``maxnreg`` for a tile of ``config``: the registers per thread that let
    ``config.occupancy`` tiles of ``config.num_warps`` warps share an SM, in the
    allocation unit of 8; None without an occupancy (the compiler's choice)."""
    if not config.occupancy:
        return None
    cap = REGISTERS_PER_SM // (config.occupancy * 32 * config.num_warps)
    return max(24, min(MAX_REGISTERS_PER_THREAD, cap) // 8 * 8)


def raking_rows(config: TileConfig, rows: int) -> int:
    """The raking row length a tile of ``rows`` elements along the scan axis gets:
    the config's, capped at the tile, 0 (tl.associative_scan) when off or not a
    power of two."""
    rake = min(int(config.raking or 0), rows)
    return rake if rake >= 2 and rake & (rake - 1) == 0 else 0
