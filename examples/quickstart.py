"""The README's 30-second example (tests/package/test_examples.py runs it)."""

import numpy as np

import prefixscan as ps

x = np.arange(1, 9, dtype=np.int32)
print(ps.scan(x))  # [ 1  3  6 10 15 21 28 36], dtype kept (int32)
print(ps.scan(x, "max", inclusive=False))  # exclusive running max, identity first
print(ps.scan(x, reverse=True, init=100))  # suffix sums seeded at the far end
print(ps.scan(x, order=2))  # the prefix sum applied twice, in one call
print(ps.scan(x, tuple_size=2))  # two interleaved streams: x[0::2], x[1::2]


def affine(f, g):  # apply f = (a1, b1), then g = (a2, b2)
    a1, b1 = f
    a2, b2 = g
    return a1 * a2, a2 * b1 + b2


AFFINE = ps.Monoid(affine, identity=(1, 0))
a, b = np.random.rand(2, 1000)
coef, h = ps.scan((a, b), AFFINE)  # h[t] = a[t] h[t-1] + b[t]
assert np.allclose(h, ps.linear_recurrence(a, b))

print(ps.segmented_scan(x, offsets=[0, 3, 3, 5]))  # restarts at every segment
print(ps.compact(x, x % 3 == 0))  # stream compaction through an exclusive scan
print(ps.argsort(x % 3, descending=True))  # a stable radix sort
d = ps.delta_encode(x, order=2)
assert (ps.delta_decode(d, order=2) == x).all()
