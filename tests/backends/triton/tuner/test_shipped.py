"""Shipped tables (planning/shipped.py, tuner/ship.py): a known GPU uses its own, an unknown one the
closest of its architecture, the user's table overrides them key by key.

Fakes and fixtures: fakes.py and conftest.py of this folder.
"""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

import prefixscan as ps  # noqa: E402
from prefixscan.backends.triton.planning import keys, planner, shipped, sources, table  # noqa: E402
from prefixscan.backends.triton.planning.tiles import default_config  # noqa: E402
from prefixscan.backends.triton.tuner import first_use, session, ship, store  # noqa: E402

from .fakes import (DEV, GPU, H100, H200, KEY_20, KEY_26, first_use_tile, forget, shipped_entry,  # noqa: E402
                    two_tile_result, write_table)


def test_shipped_tables_load_with_their_architecture_and_provenance():
    forget()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every entry of a shipped table must load
        found = {t.gpu.name: t for t in shipped.shipped_tables()}
    assert set(found) >= {H100, H200}
    for name, t in found.items():
        raw = json.loads(t.path.read_text())
        assert t.path == shipped.shipped_path(name) and len(t.entries) == len(raw["entries"]) == 32
        assert t.gpu.capability == (9, 0) and t.gpu.sm_count == 132
        assert raw["applies_to"] == shipped.APPLIES_TO == "any prefixscan version"
        p = t.provenance
        for field in ("gpu", "date", "command", "prefixscan", "torch", "triton", "results", "notes"):
            assert p.get(field), (name, field)
        assert datetime.date.fromisoformat(p["date"]) and "prefixscan tune" in p["command"]
        # whether a repeated tune chose the same is said either way
        assert any("repeated tunes" in note or "A second tune" in note for note in p["notes"])
        # the same format as a user's table: readable by the version check when the versions match
        assert table.read_records(t.path, name, raw["version"]) == (raw["entries"], None)
    assert any(e.tile.occupancy for e in found[H200].entries.values())  # tuned with register caps


def test_known_gpu_uses_its_shipped_table_and_never_tunes(as_gpu, fake_tuner):
    calls, _ = fake_tuner
    as_gpu(H100)
    expected = shipped_entry(H100, KEY_26)
    assert first_use_tile(4, False, 1 << 27, accs=[torch.int32]) == expected.tile
    assert planner.tuned_strategy(DEV, [torch.int32], 1 << 27, 1, False) == expected.strategy
    assert planner.tuned_strategy(DEV, [torch.int32], 1 << 27, 1, False, deterministic=True) == \
        expected.deterministic_strategy
    # a key the shipped table lacks (a user monoid on two fields): the default, still no tuning
    assert first_use_tile(8, False, 1 << 20, accs=[torch.int32] * 2) == default_config(8, False, 1, 1 << 20)
    assert calls == [] and not table.cache_path(H100).exists()
    src = sources.sources_for(DEV)
    assert src.exact and src.label == "shipped" and src.origin(KEY_26) == "shipped"
    # lazy: only this GPU's file was read
    assert list(shipped._loaded) == [shipped.shipped_path(H100)]


def test_shipped_table_applies_to_any_library_version(as_gpu, fake_tuner, monkeypatch):
    calls, _ = fake_tuner
    monkeypatch.setattr(table, "library_version", lambda: "99.0")
    as_gpu(H200)
    assert first_use_tile(8, True, 1 << 26, accs=[torch.float64]) == \
        shipped_entry(H200, keys.entry_key(8, True, "builtin", 1, 1 << 26)).tile
    assert calls == []
    assert table.cache_path(H200).name.endswith("-99.0.json")  # the user's table stays per version


def test_user_table_overrides_the_shipped_one_entry_by_entry(as_gpu, fake_tuner):
    calls, _ = fake_tuner
    as_gpu(H100)
    result, T1, _ = two_tile_result()
    write_table({KEY_20: result}, gpu=H100)
    forget()
    assert planner.choose_config(DEV, 4, False, 1 << 20, 1, False) == T1.tile  # the user's entry
    assert planner.choose_config(DEV, 4, False, 1 << 27, 1, False) == shipped_entry(H100, KEY_26).tile
    src = sources.sources_for(DEV)
    assert (src.origin(KEY_20), src.origin(KEY_26), src.origin("8B-int-user-1d-n<=2^16")) == (
        "user", "shipped", "default")
    assert src.label == "user over shipped" and calls == []


@pytest.mark.parametrize("name, sm_count, capability, closest", [
    ("NVIDIA H100 PCIe", 114, (9, 0), H100),  # same architecture: the table with the longest common name
    ("NVIDIA H200 NVL", 132, (9, 0), H200),
    ("NVIDIA GH200 480GB", 132, (9, 0), H100),  # a tie on every count: the name decides, alphabetically
])
def test_unknown_gpu_of_a_shipped_architecture_uses_the_closest_table(as_gpu, fake_tuner, name, sm_count,
                                                                      capability, closest):
    calls, _ = fake_tuner
    as_gpu(name, sm_count, capability)
    assert planner.choose_config(DEV, 4, False, 1 << 27, 1, False) == shipped_entry(closest, KEY_26).tile
    assert first_use.resolve(DEV, 4, False, "builtin", 1, 1 << 27)[1] and calls == []
    first_use_tile(8, False, 1 << 20, accs=[torch.int32] * 2)  # a key the table lacks: no tuning either
    assert calls == []
    src = sources.sources_for(DEV)
    assert not src.exact and src.label == f"closest shipped for {closest}"


def _fake_shipped(name, sm_count, capability):
    return shipped.ShippedTable(table.GpuProperties(name, sm_count, capability), Path(f"{name}.json"), {}, {})


def test_closest_ranks_compute_capability_then_sm_count():
    tables = [_fake_shipped(*spec) for spec in (("A", 132, (9, 0)), ("B", 78, (9, 0)), ("C", 128, (8, 9)),
                                                ("D", 132, (9, 2)))]

    def closest(sm_count, capability):
        found = shipped.closest(table.GpuProperties("X", sm_count, capability), tables)
        return found.gpu.name if found else None

    assert closest(80, (9, 0)) == "B"  # same capability: the nearest SM count
    assert closest(132, (9, 0)) == "A"
    assert closest(100, (9, 2)) == "D"  # the same capability first, whatever the SM count
    assert closest(84, (8, 6)) == "C"  # the only one of architecture 8
    assert closest(80, (7, 0)) is None and closest(80, (10, 0)) is None  # no table of that architecture
    assert shipped.closest(table.GpuProperties("X"), tables) is None  # properties unknown


def test_unknown_architecture_falls_back_to_first_use_tuning(as_gpu, fake_tuner):
    calls, T1 = fake_tuner
    as_gpu("NVIDIA A100-SXM4-80GB", 108, (8, 0))
    assert sources.sources_for(DEV).label == "none"
    assert first_use_tile(4, False, 1 << 20) == T1.tile and len(calls) == 1
    assert sources.sources_for(DEV).label == "user"
    data = json.loads(table.cache_path("NVIDIA A100-SXM4-80GB").read_text())
    assert (data["sm_count"], data["compute_capability"]) == (108, [8, 0])  # recorded with the entry


def test_shipped_tables_can_be_turned_off(as_gpu, fake_tuner, monkeypatch):
    calls, T1 = fake_tuner
    monkeypatch.setenv("PREFIXSCAN_SHIPPED_TABLES", "0")
    as_gpu(H100, 132, (9, 0))
    assert first_use_tile(4, False, 1 << 20) == T1.tile and len(calls) == 1
    assert sources.sources_for(DEV).shipped is None


def test_first_use_of_the_largest_bucket_needs_room_on_the_gpu(fake_gpu, fake_tuner, monkeypatch):
    """The >= 2^26 bucket is tuned at 2^26 elements; where that does not fit in free
    memory the key keeps its default, without a warning."""
    calls, _ = fake_tuner
    asked = []
    monkeypatch.setattr(first_use, "_room_for", lambda device, nbytes: asked.append(nbytes) or False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert first_use_tile(8, False, 1 << 27) == default_config(8, False, 1, 1 << 27)
    assert calls == [] and asked == [8 << 26]
    assert keys.bucket_size(keys.size_bucket(1 << 40)) == keys.bucket_size("n>=2^26") == 1 << 26


def test_table_metadata_round_trip(tmp_path):
    """A user's table records the GPU's SM count and compute capability (kept when a
    later write does not know them); a shipped table adds its provenance, and reads
    back the same entries and properties."""
    r = two_tile_result()[0]
    path = table.cache_path(GPU, directory=tmp_path)
    props = table.GpuProperties(GPU, 46, (8, 9))
    store.save_table(path, GPU, {KEY_20: r.to_record()}, properties=props)
    store.save_table(path, GPU, {"k2": r.to_record()})
    data, problem = table.read_file(path, GPU, ps.__version__)
    assert problem is None and set(data["entries"]) == {KEY_20, "k2"}
    assert (data["sm_count"], data["compute_capability"]) == (46, [8, 9])
    out = ship.make_shipped(path, sm_count=46, capability=(8, 9), directory=tmp_path / "tables",
                               provenance={"date": "2026-01-01", "command": "prefixscan tune"})
    assert out == shipped.shipped_path(GPU, tmp_path / "tables") and oct(out.stat().st_mode & 0o777) == "0o644"
    loaded = shipped.load_shipped(out)
    assert loaded.gpu == props and loaded.provenance["command"] == "prefixscan tune"
    assert loaded.entries == table.load_table(path, GPU) and loaded.data["applies_to"] == shipped.APPLIES_TO
    assert shipped.shipped_for(GPU, lambda: pytest.fail("own table: no properties"), tmp_path / "tables") == (
        loaded, True)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"gpu": GPU, "entries": {KEY_20: {"strategy": "warp_drive"}}}))
    with pytest.raises(ValueError, match="warp_drive"):
        ship.make_shipped(bad, sm_count=1, capability=(1, 0), provenance={}, directory=tmp_path)


def test_a_shipped_table_from_the_parts_of_one_tune(tmp_path):
    """`add` of the 1-D and 2-D keys tuned in two runs: one table of both; a key in two
    parts, or parts of two GPUs, are refused before anything is written."""
    r = two_tile_result()[0]
    key_2d = keys.entry_key(4, False, "builtin", 4, 1 << 20)
    parts = []
    for name, key in (("one", KEY_20), ("two", key_2d)):
        path = tmp_path / name / "table.json"
        path.parent.mkdir()
        store.save_table(path, GPU, {key: r.to_record()})
        parts.append(path)
    tables = tmp_path / "tables"
    assert ship.main(["add", *map(str, parts), "--sm-count", "46", "--capability", "8.9", "--command",
                         "prefixscan tune --layouts 1d; prefixscan tune --layouts 2d", "--out", str(tables)]) == 0
    loaded = shipped.load_shipped(shipped.shipped_path(GPU, tables))
    assert set(loaded.entries) == {KEY_20, key_2d} and loaded.provenance["command"].endswith("--layouts 2d")
    other = tmp_path / "other.json"
    store.save_table(other, "Another GPU", {"k3": r.to_record()})
    for bad, message in (((parts[0], parts[0]), "already come from another source"),
                         ((parts[0], other), "a table of 'Another GPU'")):
        with pytest.raises(ValueError, match=message):
            ship.make_shipped(*bad, sm_count=1, capability=(1, 0), provenance={}, directory=tmp_path / "no")
    assert not (tmp_path / "no").exists()
    with pytest.raises(ValueError, match="no table given"):
        ship.make_shipped(sm_count=1, capability=(1, 0), provenance={})


def test_defaults_are_the_best_tiles_across_the_shipped_tables():
    """tiles.py's default per key is what derive_defaults finds in the shipped tables
    (the comment there lists the ratios): after a shipped table changes, both change."""
    forget()
    derived = ship.derive_defaults(shipped.shipped_tables())
    assert len(derived) == 32
    for (nbytes, floating, layout, bucket), (tile, ratios) in derived.items():
        n = keys.bucket_size(bucket)
        assert default_config(nbytes, floating, 1 if layout == "1d" else 4, n) == tile, (nbytes, floating,
                                                                                         layout, bucket)
        assert set(ratios) == {H100, H200} and min(r for r, _ in ratios.values()) >= 1.0
    # the old per-dtype int64 tile was 1.72x / 1.83x slower than the best at 2^26 (2-D)
    assert max(derived[(8, False, "2d", "n>=2^26")][1][g][0] for g in (H100, H200)) < 1.02


def test_info_says_which_table_each_gpu_uses(fake_gpu):
    def label(gpu):
        return next(line for line in session.info_lines([gpu]) if line.startswith("  cuda:0")).split("table: ")[1]

    assert label(table.GpuProperties(H100, 132, (9, 0))) == "shipped"
    assert label(table.GpuProperties("NVIDIA H100 PCIe", 114, (9, 0))) == f"closest shipped for {H100}"
    assert label(table.GpuProperties("NVIDIA A100-SXM4-80GB", 108, (8, 0))) == "none"
    write_table({KEY_20: two_tile_result()[0]}, gpu=H200)
    text = "\n".join(session.info_lines([table.GpuProperties(H200, 132, (9, 0))]))
    assert "table: user over shipped" in text and "override the shipped ones key by key" in text
    assert "shipped table: NVIDIA_H200.json" in text and "any prefixscan version" in text


def test_loading_the_shipped_table_is_lazy():
    """Importing prefixscan (and its tuning module) reads no table and imports no torch."""
    code = ("import sys, prefixscan, prefixscan.tuning\n"
            "from prefixscan.backends.triton.planning import shipped\n"
            "assert 'torch' not in sys.modules and 'triton' not in sys.modules, 'imported'\n"
            "assert not shipped._loaded and not shipped._all, 'a table was read'\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
