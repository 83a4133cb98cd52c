"""The benchmark's CUB peer (cuda.compute) against a stand-in with cuda.compute 1.2's
keyword-only signatures: planned once (make_inclusive_scan, temporary storage sized by a
call without storage, allocated once), then one call per scan, order q as q scans."""

from __future__ import annotations

import types

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from prefixscan.benchmark.peers import NotApplicable, _cccl_peer  # noqa: E402


def fake_cuda_compute(log, buffers=None):
    buffers = set() if buffers is None else buffers
    class Scan:
        def __init__(self, *, d_in, d_out, op, init_value):
            log.append(("make", init_value))

        def __call__(self, *, temp_storage, d_in, d_out, op, init_value, num_items):
            if temp_storage is None:
                log.append(("size", num_items))
                return 256
            assert temp_storage.numel() == 256
            log.append(("scan", num_items))
            buffers.add(id(temp_storage))
            torch.cumsum(d_in[:num_items], 0, out=d_out[:num_items])
            return None

    return types.SimpleNamespace(make_inclusive_scan=Scan, OpKind=types.SimpleNamespace(PLUS="plus"))


@pytest.mark.parametrize("order", [1, 3])
def test_cub_peer_plans_once_and_scans(order):
    log, buffers = [], set()
    peer = _cccl_peer(fake_cuda_compute(log, buffers), None, order, 1)
    x = torch.arange(1, 11, dtype=torch.int64)
    out = torch.full_like(x, -7)
    (run,) = peer.build([x], [out])
    assert log == [("make", None), ("size", 10)]
    for _ in range(2):
        assert run() is out
    want = x.numpy()
    for _ in range(order):
        want = np.cumsum(want)
    np.testing.assert_array_equal(out.numpy(), want)
    assert log[2:] == [("scan", 10)] * (2 * order)
    assert len(buffers) == 1  # the temporary storage allocated once, not per call


def test_cub_peer_has_no_tuples():
    with pytest.raises(NotApplicable):
        _cccl_peer(fake_cuda_compute([]), None, 1, 4).build([torch.zeros(8)], [torch.zeros(8)])
