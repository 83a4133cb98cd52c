"""Tile configurations of the look-back kernels and the hand-measured defaults.

A tile is what one program scans: ``block`` elements (rows x column block for
the 2-D kernel), ``num_warps`` warps, a look-back window of ``window`` status
words per step (Merrill & Garland 2016, section 4), an optional raking row
length (Merrill & Grimshaw 2009's SRTS) and a register cap expressed as
resident tiles per SM.  The defaults below were measured, not modelled, as SAM
(Maleki et al. 2016) and Merrill & Grimshaw tune theirs; the tuner
(:mod:`.tuner`) replaces them per GPU.  In the interpreter tiles are tiny so
that multi-tile look-back paths run on small inputs.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TileConfig", "INTERPRETER_TILE", "default_config", "register_cap", "raking_rows",
           "REGISTERS_PER_SM", "MAX_REGISTERS_PER_THREAD"]


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

# (element bytes, floating) -> config.  Measured on an H100 80GB HBM3 at n = 2^28
# (4-byte) and 2^27 (8-byte), docs/design/tuning-method.md: fewer warps
# per tile won every time (4 warps beat 8 by 20-40%), larger tiles helped 4-byte ints.
_MEASURED = {(4, False): TileConfig(16384, 4, 32), (4, True): TileConfig(8192, 4, 32),
             (8, False): TileConfig(4096, 8, 32), (8, True): TileConfig(8192, 4, 32)}
# Element sizes not measured yet: the 4-byte choice scaled to about 64 KB per tile.
_FALLBACK = {1: TileConfig(16384, 4, 32), 2: TileConfig(16384, 4, 32)}

def default_config(itemsize: int, floating: bool) -> TileConfig:
    """The hand-measured choice for ``itemsize`` accumulator bytes (no tuned entry)."""
    return _MEASURED.get((itemsize, floating)) or _FALLBACK.get(itemsize) or _MEASURED[(8, floating)]


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
