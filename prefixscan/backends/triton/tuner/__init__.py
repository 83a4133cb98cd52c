"""Auto-tuning of the GPU scan: measure the candidates on this GPU, keep the
fastest one whose result is right, and cache the choice on disk per GPU name.

What is tuned, per key (:mod:`..planning.keys`: accumulator bytes, int/float, operator
class, layout, size bucket), is the tile (elements per tile, warps, look-back
window, raking, register cap; :class:`..planning.tiles.TileConfig`) and the
meta-strategy (:mod:`..planning.registry`).  The method follows the papers this library
builds on, which both found that the best configuration depends on the GPU and
the problem size in ways no model predicts well: SAM (Maleki, Yang & Burtscher,
PLDI 2016) ships an auto-tuner that picks the elements per thread for ranges
of problem sizes, and Merrill & Grimshaw 2009 (section 4.2) tune their
data-movement configuration and grid size per GPU, having measured up to 1.3x
(in-out) and 2.1x (in-only) between configurations they considered reasonable.

For one key, at a representative size of its bucket, the tuner runs every
candidate of a small grid (:mod:`.candidates`; it contains every fixed tile
the benchmark sweep times), verifies each against the default scan on fresh
random data before timing it (bitwise for integers), times it with CUDA
events (a score that blends device time and the time a waiting caller sees,
:mod:`.measure`), re-measures the few fastest in interleaved rounds, and
replaces a default only by a challenger that then wins a duel against it:
fresh rounds of the two alone, decided on their ratio within each round
(:func:`.search.duel`); the chosen decoupled look-back tile is then tried
under register caps.  Entries go to a JSON table per GPU and library version
(:mod:`..planning.table`, written by :mod:`.store`).

Tables for the GPUs we have measured ship with the package (:mod:`..planning.shipped`, made by :mod:`.ship`),
and a GPU of the same architecture uses the closest one; the user's own table
overrides them key by key (:mod:`..planning.sources`, which the planner reads).  Only a
GPU that no shipped table serves tunes a missing key on first use, at the size
its bucket serves, within a few seconds (:mod:`.first_use`); ``prefixscan
tune`` tunes a whole grid of keys (:mod:`.session`); :mod:`.compare` times the
tuned choice against every fixed one for the benchmark.  Measurements and what
shaped the method: docs/design/tuning-method.md; user documentation:
docs/tuning.md; the public API: :mod:`prefixscan.tuning`.

This package is the tuner's write side; the read side (keys, tables, shipped
tables, sources) is :mod:`..planning`, which never imports it.  Layers depend
one way: planning <- candidates <- search <- measure <- first_use <- compare /
session, with store <- ship beside them; the planner reads sources only.
"""
