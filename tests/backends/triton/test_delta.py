"""The delta-coding kernel (primitives/delta/triton.py): one launch per call, along any axis.

Its results on every backend: tests/algorithms/test_delta.py.

Device, sizes and data: device.py of this folder.
"""

from __future__ import annotations

import numpy as np

# First: it skips this module where no Triton backend runs.
from .device import DEVICE_MARK, random_data, to_device

import prefixscan as ps  # noqa: E402
from prefixscan.testing import reference_delta_encode  # noqa: E402

pytestmark = DEVICE_MARK


def test_delta_axis_and_one_launch(monkeypatch):
    """Axis 0 of a 3-D array (interleaved lanes) and a single launch per call."""
    from prefixscan.primitives.delta import triton as delta

    launches = []
    kernel = delta.delta_encode_kernel
    monkeypatch.setattr(delta, "delta_encode_kernel", type("Spy", (), {
        "__getitem__": lambda self, grid: (launches.append(grid), kernel[grid])[1]})())
    rng = np.random.default_rng(3)
    x = random_data(rng, "int32", (24, 3, 5))
    for axis, q, s in ((0, 3, 2), (1, 2, 3), (-1, 4, 5)):
        got = ps.delta_encode(to_device(x), q, s, axis=axis, backend="triton")
        np.testing.assert_array_equal(got.cpu().numpy(), reference_delta_encode(x, q, s, axis=axis))
    assert len(launches) == 3
