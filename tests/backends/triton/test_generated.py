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


def _functions_in_tuples(value, inside=False):
    """The Triton functions held inside tuples of a constexpr value (nested ones too)."""
    if isinstance(value, tuple):
        return [f for v in value for f in _functions_in_tuples(v, True)]
    fn = getattr(value, "fn", None)
    return [value] if inside and callable(fn) else []


def test_functions_inside_constexpr_tuples_are_named_by_content():
    """Triton keys its disk cache by a constexpr function's source (``cache_key``), but by
    the printed name of one inside a tuple: every function a launch passes inside a
    tuple must be a generated one, named after its content; a hand-written function goes
    as its own constexpr.  Every primitive's launches, in the interpreter."""
    import re

    import numpy as np
    import torch

    from prefixscan.backends.triton.runtime import launch as runtime

    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.integers(0, 100, 300).astype(np.int32))
    m = torch.from_numpy(rng.random(300) < 0.5)
    a, b = (torch.from_numpy(rng.random((3, 40)).astype(np.float32)) for _ in range(2))
    with runtime.recording() as launches:
        ps.compact(x, m, size=40, fill_value=3, backend="triton")
        ps.segmented_scan(x, offsets=[0, 17, 90], backend="triton")
        ps.scan(x, "max", backend="triton")
        ps.scan(torch.from_numpy(rng.integers(0, 9, (40, 5)).astype(np.int32)), "add", axis=0, order=2,
                backend="triton")
        ps.linear_recurrence(a, b, backend="triton")
        ps.linear_recurrence(a.log(), b, log_space=True, backend="triton")
        ps.argsort(x, backend="triton")
        ps.scan(x, "add", strategy="reduce_then_scan", backend="triton")
    generated = re.compile(r"_(combine|segmented_combine|segmented)_[0-9a-f]{24}$")
    seen = 0
    for launch in launches:
        for value in launch.constexprs.values():
            for function in _functions_in_tuples(value):
                assert generated.match(function.fn.__name__), (launch.kernel, function.fn.__name__)
                seen += 1
    assert seen >= 10


def test_closures_of_one_factory_get_their_own_names(monkeypatch):
    """A combine that reads a captured value (allowed with
    TRITON_ALLOW_NON_CONSTEXPR_GLOBALS=1): two closures of one factory share their source
    and Triton's cache_key, and are told apart by the values they read.  Compiled-mode
    functions (JITFunction) built directly: the interpreter's have no cache_key."""
    from triton.runtime.jit import JITFunction

    from prefixscan.backends.triton.device.combine import content_key

    monkeypatch.setenv("TRITON_ALLOW_NON_CONSTEXPR_GLOBALS", "1")

    def make(c):
        def combine(a, b):
            return a + b * c
        return combine

    two, three, again = (content_key(JITFunction(make(c))) for c in (2.0, 3.0, 2.0))
    assert two != three and two == again
