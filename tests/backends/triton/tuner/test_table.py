"""The tuning table on disk (planning/table.py, tuner/store.py): where it lives, its file format, and
that a broken file or entry never breaks a scan.

Fakes and fixtures: fakes.py and conftest.py of this folder.
"""

from __future__ import annotations

import json
import warnings

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

import prefixscan as ps  # noqa: E402
from prefixscan.backends.triton.planning import planner, table  # noqa: E402
from prefixscan.backends.triton.planning.tiles import TileConfig  # noqa: E402
from prefixscan.backends.triton.tuner import store  # noqa: E402

from .fakes import D4, D20, DEV, GPU, C, searched  # noqa: E402


def test_cache_dir_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("PREFIXSCAN_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert table.cache_dir() == tmp_path / "home" / ".cache" / "prefixscan"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert table.cache_dir() == tmp_path / "xdg" / "prefixscan"
    monkeypatch.setenv("PREFIXSCAN_CACHE_DIR", str(tmp_path / "mine"))
    assert table.cache_dir() == tmp_path / "mine"


def test_cache_file_named_by_sanitized_gpu_and_version(monkeypatch, tmp_path):
    monkeypatch.setenv("PREFIXSCAN_CACHE_DIR", str(tmp_path))
    p = table.cache_path("NVIDIA H100 80GB HBM3")
    assert p == tmp_path / f"tuning-NVIDIA_H100_80GB_HBM3-{ps.__version__}.json"
    odd = table.cache_path("../evil/GPU: x", "1.0/../2")
    assert odd.parent == tmp_path and "/" not in odd.name and ".." not in odd.name
    assert table.cache_path("A", "0.1.0") != table.cache_path("A", "0.2.0") != table.cache_path("B", "0.2.0")


def test_round_trip_and_merge(tmp_path):
    r1 = searched({C("decoupled_lookback", 16384): 1.0, C("decoupled_lookback", 4096, 8): 0.5})
    path = table.cache_path(GPU, directory=tmp_path)
    store.save_table(path, GPU, {"k1": r1.to_record()})
    store.save_table(path, GPU, {"k2": r1.to_record(source="other")})  # merged, k1 kept
    data = json.loads(path.read_text())
    assert data["format"] == table.FORMAT and data["gpu"] == GPU and data["version"] == ps.__version__
    entries = table.load_table(path, GPU)
    assert set(entries) == {"k1", "k2"}
    assert entries["k1"].strategy == "decoupled_lookback"
    assert entries["k1"].tile == TileConfig(4096, 8, 32, D4.max_kb, D4.packed)
    assert entries["k2"].record["source"] == "other"
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary file left


def test_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    path = table.cache_path(GPU, directory=tmp_path)
    rec = searched({C("decoupled_lookback", 16384): 1.0}).to_record()
    store.save_table(path, GPU, {"k1": rec})
    before = path.read_bytes()

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(table.os, "replace", boom)
    with pytest.raises(OSError):
        store.save_table(path, GPU, {"k2": rec})
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


@pytest.mark.parametrize("content, problem", [
    ("{not json", "corrupt"),
    (json.dumps({"format": "something else"}), "not a prefixscan"),
    (json.dumps({"format": table.FORMAT, "gpu": "Other GPU", "version": ps.__version__, "entries": {}}), "Other GPU"),
])
def test_unusable_file_is_ignored_with_a_warning(tmp_path, content, problem):
    path = table.cache_path(GPU, directory=tmp_path)
    path.write_text(content)
    with pytest.warns(table.TuningCacheWarning, match=problem):
        assert table.load_table(path, GPU) == {}


def test_bad_entry_skipped_good_one_kept(tmp_path):
    path = table.cache_path(GPU, directory=tmp_path)
    good = searched({C("decoupled_lookback", 16384): 1.0}).to_record()
    bad_tile = dict(good, tile={"block": 1000, "num_warps": 3, "window": 0})
    not_det = dict(good, deterministic_strategy="decoupled_lookback")  # not a deterministic strategy
    unknown = dict(good, strategy="bogus")
    path.write_text(json.dumps({"format": table.FORMAT, "gpu": GPU, "version": ps.__version__,
                                "entries": {"good": good, "b1": bad_tile, "b2": not_det, "b3": unknown,
                                            "b4": "nonsense"}}))
    with pytest.warns(table.TuningCacheWarning, match="4 bad entries"):
        assert set(table.load_table(path, GPU)) == {"good"}


def test_corrupt_cache_does_not_break_a_lookup(fake_gpu, monkeypatch):
    table.cache_path(GPU).write_text("\x00garbage")
    monkeypatch.setenv("PREFIXSCAN_AUTOTUNE", "0")
    with pytest.warns(table.TuningCacheWarning):
        assert planner.choose_config(DEV, 4, False, 1 << 20, 1, False) == D20
    # read once per process: no second warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert planner.choose_config(DEV, 4, False, 1 << 20, 1, False) == D20
