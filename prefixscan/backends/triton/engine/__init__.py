"""The single-pass engine: one decoupled look-back pipeline under every GPU primitive.

Every single-pass primitive (the scan with its orders and tuple sizes, the segmented
scan, compaction and partition, the linear recurrence, delta decoding) runs the same
steps per tile (Merrill & Garland 2016, "Single-pass Parallel Prefix Scan with
Decoupled Look-back", section 4): a tile id in start order, its aggregate published,
the look-back over its predecessors, its inclusive prefix published
(:mod:`.pipeline`), with one status protocol, epoch-tagged words read by atomics
(:mod:`.protocol`), and one host-side owner of the status buffers, the epochs and the
tile counter (:mod:`.state`).  A primitive supplies what a tile loads, the monoid it
carries between tiles and what it stores.  docs/design/engine.md describes it.
"""
