"""The engine's status protocol (engine/protocol.py): tagged status words read back bit for bit,
torn or stale entries read as not ready.

Device, sizes and data: device.py of this folder.
"""

from __future__ import annotations

import pytest

# First: it skips this module where no Triton backend runs.
from .device import DEVICE, DEVICE_MARK, torch

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from prefixscan.backends.triton.engine import protocol  # noqa: E402

pytestmark = DEVICE_MARK


@triton.jit
def _publish_then_read(status_ptr, a_ptr, b_ptr, state_ptr, a_out, b_out, epoch, N: tl.constexpr,
                       PUBLISH: tl.constexpr, WORDS: tl.constexpr):
    """Entry i gets fields (a[i], b[i]) published with state 2 (when PUBLISH), then
    entries 0..N-1 are read back as a look-back window reads them."""
    i = tl.arange(0, N)
    ident = (tl.load(a_ptr), tl.load(b_ptr))
    if PUBLISH:
        for k in tl.static_range(N):
            value = (tl.load(a_ptr + k), tl.load(b_ptr + k))
            protocol.publish((status_ptr, status_ptr, (a_ptr, b_ptr), (a_ptr, b_ptr)), k, value, 2, epoch, WORDS)
    state, value = protocol.read_entries((status_ptr, status_ptr, (a_ptr, b_ptr), (a_ptr, b_ptr)), i, i >= 0,
                                         epoch, ident, WORDS)
    tl.store(state_ptr + i, state)
    tl.store(a_out + i, value[0])
    tl.store(b_out + i, value[1])


@pytest.mark.parametrize("a_dtype,b_dtype", [(torch.int64, torch.float32), (torch.float64, torch.int16)])
def test_status_words_round_trip_and_torn_reads(a_dtype, b_dtype):
    """Tagged status words (the protocol's WORDS): every field comes back bit for bit, and
    an entry whose words carry different tags (a publication half seen) reads as
    not ready."""
    kernel = _publish_then_read
    words = sum(2 if t.itemsize == 8 else 1 for t in (a_dtype, b_dtype))
    n, epoch = 8, 5
    a = (torch.arange(n, device=DEVICE, dtype=torch.float64) * -1.5e9 + 3).to(a_dtype)
    b = (torch.arange(n, device=DEVICE, dtype=torch.float64) * 7 - 20).to(b_dtype)
    status = torch.zeros(n * words, dtype=torch.int64, device=DEVICE)
    state = torch.full((n,), -1, dtype=torch.int32, device=DEVICE)
    a_out, b_out = torch.full_like(a, 99), torch.full_like(b, 99)
    kernel[(1,)](status, a, b, state, a_out, b_out, epoch, N=n, PUBLISH=True, WORDS=words)
    assert state.cpu().tolist() == [2] * n
    assert torch.equal(a_out, a) and torch.equal(b_out, b)
    # Tear entry 3 (its last word from an aggregate publication) and age entry 5
    # (every word from the previous call): both must read as state 0.
    torn = status.clone()
    torn[3 * words + words - 1] = ((epoch * 4 + 1) << 32) | (int(torn[3 * words + words - 1]) & 0xFFFFFFFF)
    torn[5 * words:6 * words] = torn[5 * words:6 * words] - (4 << 32)
    kernel[(1,)](torn, a, b, state, a_out, b_out, epoch, N=n, PUBLISH=False, WORDS=words)
    assert state.cpu().tolist() == [2, 2, 2, 0, 2, 0, 2, 2]


def test_only_the_engine_hands_out_tile_ids_and_status():
    """Tile ids come from the engine's ``pipeline.tile_id`` and status reservations from
    its ``state.single_pass`` (a planned replay renews one through the state), so the
    counter, the tile base and the epoch follow one protocol: a kernel that took ids on
    its own (the 2-D scan and the recurrence once did) or a launcher that reserved its
    own status would escape a fix made there.  The Gluon orders kernel takes its ids
    itself (a Gluon kernel cannot call a ``triton.jit`` function) with the engine's
    counter and status; the persistent strategy keeps its own ring of carries."""
    import re
    from pathlib import Path

    import prefixscan

    root = Path(prefixscan.__file__).parent
    own_ids = {"backends/triton/engine/pipeline.py", "backends/triton/scan/orders.py"}
    own_status = {"backends/triton/engine/state.py", "backends/triton/runtime/replay.py"}
    for path in sorted(root.rglob("*.py")):
        name = path.relative_to(root).as_posix()
        text = path.read_text()
        if re.search(r"atomic_add\(counter_ptr", text):
            assert name in own_ids, f"{name} takes tile ids from the counter itself"
        if re.search(r"\.begin\(|\bstate_for\(|\.tiles_issued\b", text):
            assert name in own_status, f"{name} reserves status itself"
