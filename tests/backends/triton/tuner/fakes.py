"""What the tuner tests share: a fake GPU's name and device, candidates, searches
on fake timings, tables written into the test's cache directory.

No GPU here: the search runs on injected ``measure``/``verify`` fakes, the table
belongs to a fake GPU name written by the test into a temporary cache directory,
and the device-side plumbing runs once end to end in Triton's interpreter.  The
fixtures built on these (``fake_gpu``, ``launches``, ``fake_tuner``, ``as_gpu``)
are in this folder's conftest.py.
"""

from __future__ import annotations

import collections

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

import prefixscan as ps  # noqa: E402
from prefixscan.backends.triton.planning import keys, planner, shipped, table  # noqa: E402
from prefixscan.backends.triton.planning.tiles import TileConfig, default_config  # noqa: E402
from prefixscan.backends.triton.tuner import first_use, search, store  # noqa: E402

GPU = "Fake GPU 9000 (test)"
DEV = collections.namedtuple("FakeDevice", "type index")("cuda", 0)  # what lookup sees of a CUDA device
D4 = default_config(4, False)  # int32 default tile of the largest size bucket
D20 = default_config(4, False, 1, 1 << 20)  # int32 default tile of 1-D scans of 2^17..2^21 elements
H100 = "NVIDIA H100 80GB HBM3"  # GPUs with a shipped table
H200 = "NVIDIA H200"
KEY_20 = keys.entry_key(4, False, "builtin", 1, 1 << 20)  # int32, add, 1-D, 2^17..2^21
KEY_26 = keys.entry_key(4, False, "builtin", 1, 1 << 26)  # int32, add, 1-D, >= 2^26


def forget():
    """A new process as far as tuning goes: tables read again, first-use attempts forgotten."""
    table.reset()
    shipped.reset()
    first_use.reset()


def C(strategy, block, warps=4, window=32, like=D4):
    return keys.Candidate(strategy, TileConfig(block, warps, window, like.max_kb, like.packed))


def searched(times, wrong=(), **kw):
    """search() on a table of fake times; the first candidate is the default."""
    cands = list(times)
    kw.setdefault("default", cands[0])
    return search.search(cands, times.__getitem__, lambda c: c not in wrong, **kw)


def write_table(entries, gpu=GPU, directory=None):
    records = {k: (r.to_record() if isinstance(r, search.SearchResult) else r) for k, r in entries.items()}
    return store.save_table(table.cache_path(gpu, directory=directory), gpu, records)


def two_tile_result():
    T1 = C("decoupled_lookback", 2048, 8, 16)
    T2 = C("chained", 4096, 8)
    return searched({C("decoupled_lookback", 16384): 1.0, T1: 0.5, C("chained", 16384): 2.0, T2: 1.5},
                    deterministic_default=C("chained", 16384)), T1, T2


def scan_config(**kw):
    """The ScanConfig of ``prefixscan.make_scan("add", **kw)``."""
    return ps.make_scan("add", **kw).config


def first_use_tile(nbytes, floating, M, K=1, accs=None):
    """The tile a scan of M x K elements per lane gets: first-use tuning of its key
    (what the backend's entry runs before the scan path), then the planner's lookup."""
    opclass = keys.op_class(None, len(accs) if accs else 1)
    first_use.resolve(DEV, nbytes, floating, opclass, K, M * K, accs=accs)
    return planner.choose_config(DEV, nbytes, floating, M, K, False, accs=accs)


def shipped_entry(gpu, key):
    return shipped.load_shipped(shipped.shipped_path(gpu)).entries[key]
