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


def test_delta_axis_and_one_launch(kernels_run):
    """Axis 0 of a 3-D array (interleaved lanes) and a single launch per call."""
    from prefixscan.primitives.delta.triton import delta_encode_kernel

    rng = np.random.default_rng(3)
    x = random_data(rng, "int32", (24, 3, 5))
    for axis, q, s in ((0, 3, 2), (1, 2, 3), (-1, 4, 5)):
        got = ps.delta_encode(to_device(x), q, s, axis=axis, backend="triton")
        np.testing.assert_array_equal(got.cpu().numpy(), reference_delta_encode(x, q, s, axis=axis))
    assert kernels_run == [delta_encode_kernel] * 3


def test_high_orders_ping_pong_between_two_buffers(kernels_run, rng):
    """Orders above 8 run as passes of at most 8, each reading the last one's output and
    writing the other of two buffers: no copy of the array per pass, the input never
    written, and the result that of the reference."""
    from prefixscan.primitives.delta.triton import delta_encode_kernel

    x = random_data(rng, "int64", (300,))
    given = to_device(x)
    got = ps.delta_encode(given, 21, 3, backend="triton")  # passes of 8, 8 and 5 orders
    np.testing.assert_array_equal(got.cpu().numpy(), reference_delta_encode(x, 21, 3))
    np.testing.assert_array_equal(given.cpu().numpy(), x)
    assert kernels_run == [delta_encode_kernel] * 3
    (src0, dst0), (src1, dst1), (src2, dst2) = [launch.args[:2] for launch in kernels_run.launches]
    assert src0 is given and src1 is dst0 and src2 is dst1 and dst2 is dst0  # two buffers, taking turns
    assert dst0 is not dst1 and got.data_ptr() == dst2.data_ptr()
    assert [launch.constexprs["ORDER"] for launch in kernels_run.launches] == [8, 8, 5]


def test_complex_rounds_ping_pong(rng):
    """Complex tensors (no Triton type) take one torch subtraction per round, between two
    buffers: against the reference, and the input left as it was."""
    import torch

    x = (rng.standard_normal(60) + 1j * rng.standard_normal(60)).astype(np.complex128)
    given = to_device(x)
    for q, s in ((1, 1), (2, 3), (5, 2), (9, 5), (3, 60)):
        got = ps.delta_encode(given, q, s, backend="triton")
        assert isinstance(got, torch.Tensor) and got.dtype == torch.complex128
        np.testing.assert_allclose(got.cpu().numpy(), reference_delta_encode(x, q, s), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(given.cpu().numpy(), x)
