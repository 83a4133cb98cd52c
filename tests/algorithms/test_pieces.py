"""Scans of a sequence held in pieces (prefixscan/primitives/scan/pieces.py), the core of
the dask and torch.distributed scans: pieces of random lengths (empty ones
included, edges that cut tuples) reduced, their carries combined and each piece
scanned, against the reference scan of the whole sequence."""

from __future__ import annotations

import numpy as np
import pytest

from prefixscan._normalize import build_request, make_config
from prefixscan.primitives.scan.pieces import PiecewiseScan, piece_carries, piece_totals, scan_piece, seed_of
from prefixscan.testing import (
    affine_data,
    affine_monoid,
    assert_scan_equal,
    random_array,
    random_init,
    reference_scan,
    tolerance_for,
)


def piecewise(x, op, cuts, **kwargs):
    """The scan of x (lanes along axis 1) from its pieces between ``cuts``."""
    config = make_config(op, axis=1, backend=None, algorithm=None, dtype=None,
                         **{k: kwargs.get(k, d) for k, d in (("inclusive", True), ("reverse", False), ("order", 1),
                                                             ("tuple_size", 1))})
    request = build_request(config, x, kwargs.get("init"), None)
    plan = PiecewiseScan.from_request(request, 1)
    fields = x if isinstance(x, tuple) else (x,)
    bounds = [0] + cuts + [fields[0].shape[1]]
    pieces = [tuple(f[:, lo:hi] for f in fields) for lo, hi in zip(bounds[:-1], bounds[1:])]
    seed = seed_of(plan, request.init, request.lanes_shape)
    rounds = []
    for _ in range(plan.rounds):
        totals = [piece_totals(plan, p, offset=o, lower=[c[k] for c in rounds])
                  for k, (p, o) in enumerate(zip(pieces, bounds))]
        rounds.append(piece_carries(plan, totals, seed))
    outs = [scan_piece(plan, p, offset=o, carries=[c[k] for c in rounds]) for k, (p, o) in enumerate(zip(pieces, bounds))]
    result = tuple(np.concatenate([o[i] for o in outs], axis=1) for i in range(len(fields)))
    return result if isinstance(x, tuple) else result[0]


DIRECTIONS = [dict(), dict(reverse=True), dict(inclusive=False, seeded=True), dict(inclusive=False, reverse=True,
                                                                                  seeded=True)]


@pytest.mark.parametrize("op,dtype", [("add", "int32"), ("max", "float32"), ("mul", "int64"), ("xor", "uint8"),
                                      ("logaddexp", "float64"), ("add", "float16")])
@pytest.mark.parametrize("order,tuple_size", [(1, 1), (2, 1), (1, 3), (3, 2)])
@pytest.mark.parametrize("direction", DIRECTIONS)
def test_pieces_against_the_whole(rng, op, dtype, order, tuple_size, direction):
    direction = dict(direction)
    seeded = direction.pop("seeded", False)
    n = 30
    x = random_array(rng, dtype, (2, n), op)
    kwargs = dict(direction, order=order, tuple_size=tuple_size)
    if seeded:
        kwargs["init"] = random_init(rng, dtype, (2,) + ((tuple_size,) if tuple_size > 1 else ()), op)
    for cuts in ([], [0, 0], [7, 7, 8, 23], sorted(rng.integers(0, n + 1, size=4).tolist())):
        got = piecewise(x, op, cuts, **kwargs)
        assert_scan_equal(got, reference_scan(x, op, axis=1, **kwargs), **tolerance_for(x, op, axis=1, **kwargs))


@pytest.mark.parametrize("direction", DIRECTIONS[:2])
def test_non_commutative_struct(rng, direction):
    a, b = affine_data(rng, (3, 25), "int64", small=False)
    for cuts in ([1, 1, 13], [5, 24]):
        got = piecewise((a, b), affine_monoid(), cuts, order=2, tuple_size=5, **direction)
        want = reference_scan((a, b), affine_monoid(), axis=1, order=2, tuple_size=5, **direction)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
