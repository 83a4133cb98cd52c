"""Generated Triton functions (a monoid's adapters, the segmented operators) are named
after what they compute.  Triton's on-disk cache keys a kernel by its source and the
``str`` of each constexpr; a tuple of functions prints as their names, so names that
depended on the order of generation let one process run another's binary compiled for
another monoid (on the GPU: a cumulative sum came back as a product, a minimum as the
maximum's identity)."""

from __future__ import annotations

import pytest

pytest.importorskip("triton")

import prefixscan as ps  # noqa: E402
from prefixscan.backends.triton.device.combine import combine_functions  # noqa: E402
from prefixscan.backends.triton.scan.reduce_then_scan import segmented  # noqa: E402
from prefixscan.caches import clear_caches  # noqa: E402
from prefixscan.monoid import BUILTIN_OPS  # noqa: E402
from prefixscan.primitives.segmented.triton import segmented_combine  # noqa: E402


def _name(function) -> str:
    """The name Triton prints (``JITFunction(module:name)``) for a compiled function."""
    return getattr(function, "fn", function).__qualname__


def _names(monoid, nfields=1):
    pair, flat = combine_functions(monoid, nfields)
    return _name(pair), _name(flat), _name(segmented_combine(pair, nfields)), _name(segmented(flat, nfields))


def _affine(a, b):
    return a[0] * b[0], a[1] * b[0] + b[1]


def test_names_do_not_depend_on_the_order_of_generation():
    add, mul, mx = BUILTIN_OPS["add"], BUILTIN_OPS["mul"], BUILTIN_OPS["max"]
    first = _names(mul)
    clear_caches()  # as in a fresh process that meets the monoids in another order
    others = [_names(add), _names(mx), _names(mul, 2)]
    again = _names(mul)
    assert again == first
    for names in others:
        assert not set(names) & set(first)
    assert len({n for names in others for n in names}) == 12


def test_a_user_monoid_is_named_by_its_combine():
    affine = ps.Monoid(_affine, (1.0, 0.0), name="affine")
    twin = ps.Monoid(_affine, (1.0, 0.0), name="affine twin")  # the same function: the same code
    assert _names(affine, 2) == _names(twin, 2)
    assert _names(affine, 2) != _names(BUILTIN_OPS["add"], 2)
