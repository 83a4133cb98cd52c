"""Planning a GPU scan: which strategy and which tile it runs with.

* :mod:`.registry`: the meta-strategies, their names and properties;
* :mod:`.planner`: the caller's strategy or tile, else the tuned table's, else
  the defaults, memoized per key;
* :mod:`.tiles`: the tile configuration and the hand-measured defaults;
* :mod:`.policy`: the routing switches between kernel families;
* :mod:`.traffic`: the memory traffic each strategy moves (the benchmark's model);
* the read side of the tuned tables: :mod:`.keys` (what a table entry is keyed
  by), :mod:`.table` (the user's tables on disk), :mod:`.shipped` (the tables
  shipped in ``tables/``, one per GPU measured) and :mod:`.sources` (which table
  serves a GPU, what the planner reads).

Planning only reads tables; the tuner (:mod:`..tuner`) measures and writes them.
Nothing here imports torch or triton until a GPU's name or properties are asked.
"""
