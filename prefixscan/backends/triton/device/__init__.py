"""Device-side building blocks of the GPU kernels: a tile's loads, stores, reductions
and in-tile scans (:mod:`.tiles`), a monoid's ``combine`` as Triton functions
(:mod:`.combine`), and Gluon as the orders kernel sees it (:mod:`.gluon`).  Nothing here
launches a kernel or knows about other tiles."""
