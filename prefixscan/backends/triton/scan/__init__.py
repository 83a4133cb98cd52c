"""The GPU scan: its router and its kernel families.

* :mod:`.route`: from a checked request to kernel launches (strategy, kernel
  family, outputs, identities, seeds), and the planned replay;
* :mod:`.job`: the prepared tensors of one scan (:class:`.job.ScanJob`);
* :mod:`.lookback` (with the per-column kernel of :mod:`.columns`): the
  single-pass decoupled look-back and chained kernels on the engine;
* :mod:`.orders` (Gluon), its look-back :mod:`.orders_lookback` and its routing
  rules :mod:`.orders_rules`: every order of an integer sum in one pass;
* :mod:`.reduce_then_scan`, :mod:`.scan_then_propagate`, :mod:`.persistent`:
  the other meta-strategies, on the shared pieces of :mod:`.strategy_blocks`.
"""
