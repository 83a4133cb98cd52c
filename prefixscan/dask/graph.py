"""The task graph of a scan over the chunks of a dask array.

Three layers along the scanned axis, for every block of lanes (the chunks of
the other axes), the reduce-then-scan structure of Merrill & Grimshaw 2009
("Parallel scan for stream architectures") with a tree over the totals
(Blelloch 1990, "Prefix sums and their applications", section 1.2):

* **totals**: every chunk reduced to its total (a blockwise layer: one read of
  the chunk, a lane's worth of output);
* **carries**: the totals combined into every chunk's carry by an exclusive scan
  over the chunks, a tree of fan-in ``FANIN``: an up-sweep folds groups of
  totals level by level, a down-sweep hands each group its incoming carry and
  gives each member its own (``ceil(log_FANIN(chunks))`` levels each way; one
  task when the chunks are ``FANIN`` or fewer).  These tasks hold totals only;
* **scan**: every chunk scanned with its carry as ``init`` (a blockwise layer:
  one read, one write).

So the data is read twice and written once, against dask's own cumulative
reductions, which scan every chunk, write it, and read it again to add the
carry.  The scan layer reads its chunks from a clone of the input's graph
(:func:`dask.graph_manipulation.clone`): the totals layer and the scan layer
each fuse with their own copy of the chunk loads, so a chunk is loaded, reduced
and dropped, and loaded again only when its carry is known.  No task holds
more than one chunk; a worker holds about two chunks per thread (one in, one
out).  The cost: the input's own tasks run twice (persist an expensive input
first).

Higher orders take one round of totals and carries per pass (see
:mod:`prefixscan.primitives.scan.pieces`); every round reads the chunks again, from
its own clone.

What a piece's total, carry and scan are comes from a :class:`Pieces` object:
scans (:class:`prefixscan.primitives.scan.pieces.PiecewiseScan`), linear
recurrences and segmented scans each have one.
"""

from __future__ import annotations

import itertools
import operator
from typing import Any, Protocol, Sequence

import dask.array as da
import numpy as np
from dask.base import tokenize
from dask.graph_manipulation import clone
from dask.highlevelgraph import HighLevelGraph
from dask.layers import ArraySliceDep

__all__ = ["Pieces", "FANIN", "scan_chunks"]

#: Totals folded per carry task: a group's totals are a few lanes' worth of values each.
FANIN = 32


class Pieces(Protocol):
    """What the graph needs to know of one scan, independent of the data."""

    #: Rounds of totals and carries (a scan of order q has q).
    rounds: int
    #: Carries travel from the end (a reverse scan).
    reverse: bool

    def total(self, fields: tuple, offset: int, lower: Sequence) -> Any:
        """The host total of one chunk (fields: its blocks, offset: where it starts
        along the axis) for round ``len(lower) + 1``, given the carries of the
        earlier rounds."""
        ...

    def combine(self, left: Any, right: Any) -> Any:
        """Two totals combined, ``left`` the earlier; None is the identity."""
        ...

    def scan(self, fields: tuple, offset: int, carries: Sequence) -> tuple:
        """The chunk's result blocks given its carries, one per round."""
        ...


def _block_total(*blocks, pieces: Pieces, axis: int, nfields: int) -> Any:
    *arrays, slices = blocks
    return pieces.total(tuple(arrays[:nfields]), slices[axis].start, arrays[nfields:])


def _block_scan(*blocks, pieces: Pieces, axis: int, nfields: int, struct: bool) -> Any:
    *arrays, slices = blocks
    result = pieces.scan(tuple(arrays[:nfields]), slices[axis].start, arrays[nfields:])
    return tuple(result) if struct else result[0]


def _fold(pieces: Pieces, totals: list) -> Any:
    acc = None
    for t in totals:
        acc = pieces.combine(acc, t)
    return acc


def _exclusive(pieces: Pieces, seed: Any, totals: list) -> list:
    """Each total's carry within a group whose incoming carry is ``seed``."""
    carries: list = [None] * len(totals)
    acc = seed
    order = range(len(totals) - 1, -1, -1) if pieces.reverse else range(len(totals))
    for k in order:
        carries[k] = acc
        acc = pieces.combine(totals[k], acc) if pieces.reverse else pieces.combine(acc, totals[k])
    return carries


def _exclusive_in(pieces: Pieces, parent: list, position: int, totals: list) -> list:
    return _exclusive(pieces, parent[position], totals)


def _carry_layer(pieces: Pieces, totals: da.Array, axis: int, seeds: dict) -> da.Array:
    """Every chunk's carry from the chunks' totals (``totals``: one block per chunk,
    holding its total), through the fan-in tree; ``seeds`` maps a block of lanes
    (its block index without the axis) to the seed of its lanes."""
    name = "prefixscan-carries-" + tokenize(pieces, totals.name, axis, seeds)
    up, down = name + "-up", name + "-down"
    numblocks = totals.numblocks
    chunks_along = numblocks[axis]
    dsk: dict = {}
    lane_ranges = [range(nb) for i, nb in enumerate(numblocks) if i != axis]
    for lane in itertools.product(*lane_ranges):
        def block(k, lane=lane):
            return lane[:axis] + (k,) + lane[axis:]

        levels = [[(totals.name,) + block(k) for k in range(chunks_along)]]
        while len(levels[-1]) > FANIN:  # up-sweep: fold groups of FANIN
            below = levels[-1]
            keys = [(up, len(levels), g) + lane for g in range(0, (len(below) + FANIN - 1) // FANIN)]
            for g, key in enumerate(keys):
                dsk[key] = (_fold, pieces, below[g * FANIN:(g + 1) * FANIN])
            levels.append(keys)
        top = len(levels) - 1
        dsk[(down, top, 0) + lane] = (_exclusive, pieces, seeds[lane], levels[top])
        for level in range(top - 1, -1, -1):  # down-sweep: each group from its parent's carry
            items = levels[level]
            for g in range(0, (len(items) + FANIN - 1) // FANIN):
                dsk[(down, level, g) + lane] = (_exclusive_in, pieces, (down, level + 1, g // FANIN) + lane,
                                                g % FANIN, items[g * FANIN:(g + 1) * FANIN])
        for k in range(chunks_along):
            dsk[(name,) + block(k)] = (operator.getitem, (down, 0, k // FANIN) + lane, k % FANIN)
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[totals])
    return da.Array(graph, name, totals.chunks, meta=np.empty((0,) * totals.ndim, dtype=object))


def _lane_seeds(seed: tuple | None, fields: da.Array, axis: int) -> dict:
    """The seed of every block of lanes: the seed's slice of those lanes (None: none;
    a seed of one block of lanes, e.g. a 1-D array's, is any object)."""
    lane_chunks = [c for i, c in enumerate(fields.chunks) if i != axis]
    lanes = list(itertools.product(*[range(len(c)) for c in lane_chunks]))
    if seed is None or all(len(c) == 1 for c in lane_chunks):  # one block of lanes: the whole seed
        return {lane: seed for lane in lanes}
    starts = [np.cumsum((0,) + c) for c in lane_chunks]
    seeds = {}
    for lane in lanes:
        window = tuple(slice(int(st[i]), int(st[i + 1])) for st, i in zip(starts, lane))
        seeds[lane] = tuple(np.ascontiguousarray(s[window]) for s in seed)
    return seeds


def _cloned(fields: list) -> list:
    """Copies of the fields' graphs under new keys (their tasks run again for the copy)."""
    copies = clone(*fields, assume_layers=True)
    return list(copies) if len(fields) > 1 else [copies]


def scan_chunks(pieces: Pieces, fields: Sequence[da.Array], *, axis: int, seed: tuple | None,
                metas: Sequence[Any]) -> list[da.Array]:
    """The lazy result of a scan along ``axis`` over the chunks of ``fields``
    (dask arrays of one shape and one chunking), one dask array per result field
    of the given metas, on the input's chunks.  ``seed``: the init of every lane
    as host arrays of shape lanes + (s,) (None: no init)."""
    fields = list(fields)
    ndim = fields[0].ndim
    index = tuple(range(ndim))
    object_meta = np.empty((0,) * ndim, dtype=object)
    slices = ArraySliceDep(fields[0].chunks)
    seeds = _lane_seeds(seed, fields[0], axis)
    rounds: list[da.Array] = []
    for r in range(pieces.rounds):
        source = fields if r == 0 else _cloned(fields)
        args = [a for f in itertools.chain(source, rounds) for a in (f, index)]
        totals = da.blockwise(_block_total, index, *args, slices, index, pieces=pieces, axis=axis,
                              nfields=len(fields), meta=object_meta, align_arrays=False, token="prefixscan-totals")
        rounds.append(_carry_layer(pieces, totals, axis, seeds))
    # The scan reads its chunks from its own copy of the input's graph (see the module's doc).
    source = _cloned(fields)
    struct = len(metas) > 1
    args = [a for f in itertools.chain(source, rounds) for a in (f, index)]
    scanned = da.blockwise(_block_scan, index, *args, slices, index, pieces=pieces, axis=axis,
                           nfields=len(fields), struct=struct, meta=object_meta if struct else metas[0],
                           align_arrays=False, token="prefixscan-scan")
    if not struct:
        return [scanned]
    return [da.blockwise(operator.getitem, index, scanned, index, i, None, meta=meta, align_arrays=False,
                         token="prefixscan-field")
            for i, meta in enumerate(metas)]
