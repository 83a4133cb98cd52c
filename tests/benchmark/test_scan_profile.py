"""tools/scan_profile.py's case syntax (the profile itself needs a CUDA device)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from tests.repo_scripts import load_script  # noqa: E402

scan_profile = load_script("tools/scan_profile.py", "scan_profile")


def test_cases_parse():
    assert scan_profile.parse("bfloat16:28") == dict(case="bfloat16:28", dtype=torch.bfloat16, n=1 << 28, order=1,
                                                     tuple_size=1, rows=0)
    spec = scan_profile.parse("int64:27:order=8")
    assert (spec["dtype"], spec["n"], spec["order"]) == (torch.int64, 1 << 27, 8)
    assert scan_profile.parse("int32:27:tuple=32")["tuple_size"] == 32
    assert scan_profile.parse("float32:28:rows=65536")["rows"] == 65536
    with pytest.raises(KeyError):
        scan_profile.parse("int32:20:stride=2")
