"""Large host segmented scans take the compiled CPU pass (Numba) and match the reference."""

import numpy as np
import pytest

import prefixscan as ps
from prefixscan.backends.cpu import compiled as cpu_compiled
from prefixscan.testing import affine_monoid, reference_segmented_scan

pytestmark = pytest.mark.skipif(not cpu_compiled.available(), reason=cpu_compiled.unavailable_reason() or "")
N = cpu_compiled.SMALL_SCAN + 1019  # above the compiled threshold, not a multiple of anything


@pytest.fixture
def compiled_calls(monkeypatch):
    from prefixscan.primitives.segmented import compiled

    calls = []
    real = compiled.segmented_scan

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(compiled, "segmented_scan", spy)
    return calls


def _segments(rng, kind):
    heads = rng.random(N) < 0.02
    heads[0] = True
    if kind == "flags":
        return {"flags": heads}
    if kind == "keys":
        return {"keys": np.cumsum(heads).astype(np.int32) * 7}
    offsets = np.flatnonzero(heads)
    return {"offsets": np.sort(np.concatenate([offsets, offsets[-3:], [N]]))}  # empty segments, a final offset


@pytest.mark.parametrize("kind", ["flags", "offsets", "keys"])
@pytest.mark.parametrize("op", ["add", "max", "xor"])
@pytest.mark.parametrize("inclusive,reverse", [(True, False), (False, False), (True, True), (False, True)])
def test_integer_segmented_scans_are_exact(compiled_calls, kind, op, inclusive, reverse):
    rng = np.random.default_rng(hash((kind, op, inclusive, reverse)) % 2**32)
    x = rng.integers(-2**31, 2**31, N, dtype=np.int64)  # sums wrap
    seg = _segments(rng, kind)
    got = ps.segmented_scan(x, op, inclusive=inclusive, reverse=reverse, **seg)
    np.testing.assert_array_equal(got, reference_segmented_scan(x, op, inclusive=inclusive, reverse=reverse, **seg))
    assert compiled_calls


def test_non_commutative_struct_monoid(compiled_calls):
    rng = np.random.default_rng(5)
    a, b = rng.random(N), rng.random(N)
    seg = _segments(rng, "offsets")
    for reverse in (False, True):
        got = ps.segmented_scan((a, b), affine_monoid(), reverse=reverse, **seg)
        ref = reference_segmented_scan((a, b), affine_monoid(), reverse=reverse, **seg)
        for g, r in zip(got, ref):
            np.testing.assert_allclose(g, r, rtol=1e-12, atol=1e-12)
    assert compiled_calls
