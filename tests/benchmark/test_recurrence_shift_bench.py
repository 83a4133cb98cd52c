"""tools/recurrence_shift_bench.py without a GPU: its cases and its table (the timing
itself needs a CUDA device)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

from tests.repo_scripts import load_script  # noqa: E402

bench = load_script("tools/recurrence_shift_bench.py", "recurrence_shift_bench")


def test_cases_are_the_profiled_shapes_in_every_form():
    assert bench.CASES == [((8, 1024, 4096), 2), ((4, 2048, 8192), 2), ((8, 4096, 1024), 1)]
    assert sorted(bench.DTYPES) == ["bfloat16", "float32"]
    assert bench.SHIFTS == ("load", "edge", "gather")


def test_table_has_a_row_per_record():
    record = dict(shape=[8, 1024, 4096], axis=2, dtype="bfloat16", shift="edge", queued_ms=0.1234, of_roof=0.912,
                  vs_load=1.5, max_abs_diff_vs_load=0.0)
    table = bench.markdown([record, dict(record, shift="load", vs_load=1.0, queued_ms=0.185)], "H200").splitlines()
    assert table[-2] == "| 8x1024x4096 | 2 | bfloat16 | edge | 0.1234 | 0.912 | 1.500 | 0 |"
    assert table[-1].startswith("| 8x1024x4096 | 2 | bfloat16 | load | 0.1850 |")
