"""Table keys (planning/keys.py): coarse size buckets, operator classes, tiles as
records.

Fakes and fixtures: fakes.py and conftest.py of this folder.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

import prefixscan as ps  # noqa: E402
from prefixscan.backends.triton.planning.tiles import TileConfig  # noqa: E402
from prefixscan.backends.triton.planning import keys  # noqa: E402


def test_size_buckets():
    assert keys.size_bucket(1) == keys.size_bucket(1 << 16) == "n<=2^16"
    assert keys.size_bucket((1 << 16) + 1) == keys.size_bucket(1 << 21) == "2^17-2^21"
    assert keys.size_bucket((1 << 21) + 1) == keys.size_bucket(1 << 25) == "2^22-2^25"
    assert keys.size_bucket((1 << 25) + 1) == keys.size_bucket(1 << 40) == "n>=2^26"


def test_keys_are_coarse_no_per_size_entries():
    sizes = [s + d for e in range(0, 34) for s in [1 << e] for d in (-1, 0, 1) if s + d > 0]
    found = {keys.entry_key(4, False, "builtin", 1, n) for n in sizes}
    assert len(found) == 4
    assert len({keys.entry_key(8, True, "user", K, 1 << 20) for K in (2, 4, 100, 4096)}) == 1
    assert keys.entry_key(8, True, "user", 1, 1 << 20) != keys.entry_key(8, True, "user", 4, 1 << 20)
    assert keys.entry_key(8, True, "builtin", 1, 8) != keys.entry_key(8, False, "builtin", 1, 8)
    assert keys.entry_key(8, True, "builtin", 1, 8) != keys.entry_key(4, True, "builtin", 1, 8)


def test_operator_class():
    assert keys.op_class(ps.BUILTIN_OPS["add"], 1) == keys.op_class(None, 1) == "builtin"
    assert keys.op_class(ps.BUILTIN_OPS["max"], 2) == "user"  # several fields
    assert keys.op_class(ps.AFFINE, 2) == "user"
    assert keys.op_class(ps.Monoid(lambda a, b: a + b, 0), 1) == "user"


def test_occupancy_round_trips_through_the_table(tmp_path):
    tile = TileConfig(8192, 4, 16, occupancy=5)
    assert keys.tile_from(keys.tile_dict(tile)) == tile
    legacy = {k: v for k, v in keys.tile_dict(tile).items() if k != "occupancy"}  # tables written before it
    assert keys.tile_from(legacy) == TileConfig(8192, 4, 16)
    for bad in (-1, 65, True, 2.5):
        with pytest.raises(ValueError, match="occupancy"):
            keys.tile_from(dict(keys.tile_dict(tile), occupancy=bad))
