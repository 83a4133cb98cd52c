"""examples/zarr_dask.py on small data: a Zarr array scanned chunk by chunk into
another (the delta codec as its filter) on a LocalCluster of two worker processes,
the result checked exactly against a running NumPy cumsum."""

from __future__ import annotations

import pathlib
import runpy

import pytest

pytest.importorskip("dask.distributed")
pytest.importorskip("zarr", minversion="3")

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "zarr_dask.py"


def test_zarr_to_zarr_on_a_local_cluster(tmp_path):
    example = runpy.run_path(str(EXAMPLE), run_name="zarr_dask")
    summary = example["run"](elements=3 * 2**12 + 5, chunk=2**10, workers=2, memory_limit="512MiB",
                             directory=tmp_path, measure_memory=False)
    assert summary["chunks"] == summary["chunks_verified"] == 13  # the last chunk partial
    import zarr

    stored = zarr.open_array(str(tmp_path / "positions.zarr"), mode="r")
    assert [type(c).__name__ for c in stored.metadata.codecs][0] == "Delta"  # the prefixscan filter
    assert stored.chunks == (2**10,)
