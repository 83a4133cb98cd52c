"""``prefixscan bench --dtypes float16,bfloat16``: the dtype helpers that stand in
for ``numpy.dtype`` (NumPy has no bfloat16), the -1..1 data of 16-bit floats, their
verification (exact sums rounded once to 16 bits), float16 end to end on the
host, bfloat16 refused on ``--device cpu``, and (GPU) both on CUDA.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from prefixscan.benchmark import parse_dtypes, run_benchmark
from prefixscan.benchmark.cases import SizeCase, eps_of, itemsize_of, kind_of
from prefixscan.benchmark.peers import Implementation, cpu_peers
from prefixscan.benchmark.runner import Progress, measure_host
from prefixscan.benchmark.verify import expected_result, verify_device, verify_host
from prefixscan.cli import main

torch = pytest.importorskip("torch")
CUDA = torch.cuda.is_available()


def case_of(dtype: str, n: int, order: int = 1) -> SizeCase:
    return SizeCase(dtype=dtype, n=n, log2n=max(0, n.bit_length() - 1), order=order, tuple_size=1, repeats=2)


def test_parse_dtypes_takes_16_bit_floats():
    assert parse_dtypes("float16, bfloat16,half") == ["float16", "bfloat16"]
    assert parse_dtypes(["bfloat16"], "cuda") == ["bfloat16"]
    assert parse_dtypes("float16", "cpu") == ["float16"]
    with pytest.raises(ValueError, match="--dtypes"):
        parse_dtypes("bfloat16", "cpu")
    with pytest.raises(ValueError, match="--dtypes"):
        parse_dtypes("nonesuch")


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "int8", "uint64"])
def test_dtype_helpers_agree_with_torch(name):
    t = getattr(torch, name)
    assert itemsize_of(name) == torch.empty(0, dtype=t).element_size()
    assert kind_of(name) == ("f" if t.is_floating_point else ("i" if t.is_signed else "u"))
    if t.is_floating_point:
        assert eps_of(name) == torch.finfo(t).eps


def test_16_bit_floats_draw_data_in_minus_one_to_one():
    assert case_of("float16", 8).data_bounds() == (-1, 2)
    assert case_of("bfloat16", 8).data_bounds() == (-1, 2)
    for name in ("int16", "float32", "float64", "uint8"):
        assert case_of(name, 8).data_bounds() == (-4, 5)  # unchanged: earlier results stay reproducible


def perturbed(values, at: int, by: float):
    wrong = values.copy() if isinstance(values, np.ndarray) else values.clone()
    wrong[at] += by
    return wrong


def test_float16_host_results_verified_and_wrong_ones_rejected(rng):
    case = case_of("float16", 4099)
    small = rng.integers(*case.data_bounds(), size=case.n, dtype=np.int8)
    expected = expected_result(small, case)
    exact = np.cumsum(small.astype(np.float64))
    np.testing.assert_array_equal(expected.reference, exact)
    assert expected.relative == eps_of("float16")  # per element: one rounding (eps/2) fits
    assert verify_host(exact.astype(np.float16), expected) == (True, "")
    by = 2 + 2 * expected.relative * abs(exact[case.n // 2])
    ok, why = verify_host(perturbed(exact, case.n // 2, by).astype(np.float16), expected)
    assert not ok and f"first at {case.n // 2}" in why
    ok, why = verify_host(exact.astype(np.float32), expected)
    assert not ok and "dtype float32" in why


@pytest.mark.parametrize("order", [1, 2])
def test_bfloat16_results_verified_and_wrong_ones_rejected(rng, order):
    """verify_device on CPU tensors: the check is the same on any torch device."""
    case = case_of("bfloat16", 3001, order)
    small = rng.integers(*case.data_bounds(), size=case.n, dtype=np.int8)
    expected = expected_result(small, case)
    exact = small.astype(np.float64)
    for _ in range(order):
        exact = np.cumsum(exact)
    np.testing.assert_array_equal(expected.reference, exact)
    ref = torch.from_numpy(expected.reference)
    rounded_once = ref.to(torch.bfloat16)
    check = dict(tolerance=expected.tolerance, relative=expected.relative)
    assert verify_device(rounded_once, ref, "bfloat16", **check) == (True, "")
    wrong = perturbed(rounded_once, 1234, 2 * expected.tolerance + 8 + 2 * expected.relative * abs(exact[1234]))
    ok, why = verify_device(wrong, ref, "bfloat16", **check)
    assert not ok and "first at 1234" in why
    ok, why = verify_device(ref.to(torch.float16), ref, "bfloat16", **check)
    assert not ok and "expected bfloat16" in why


def test_float16_of_higher_orders_is_refused_where_it_overflows():
    with pytest.raises(ValueError, match="--dtypes: float16 with --order > 1"):
        run_benchmark(device="cpu", sizes=[12], dtypes="float16", order=2, progress=False)
    result = run_benchmark(device="cpu", sizes=[10], dtypes="float16", order=2, repeats=1, progress=False,
                           primitives=False)
    assert all(r["verified"] for r in result["records"] if r["impl"] in ("copy", "prefixscan"))


def test_16_bit_sums_are_checked_per_element():
    """A float16 accumulator (numpy.cumsum in float16) is off by 4 once its sums pass
    2048, within a tolerance scaled by the largest sum (about 20 here) but not within
    eps of each element, which one rounding of the exact sum always is."""
    rng = np.random.default_rng(2)
    case = case_of("float16", 1 << 15)
    small = rng.choice(np.array([-1, 0, 1], np.int8), size=case.n, p=[0.26875, 0.4, 0.33125])
    expected = expected_result(small, case)
    exact = np.cumsum(small.astype(np.float64))
    drifting = np.cumsum(small.astype(np.float16), dtype=np.float16)
    error = np.abs(drifting.astype(np.float64) - exact).max()
    assert 0 < error <= 10 * eps_of("float16") * (np.abs(exact).max() + 1)
    assert verify_host(exact.astype(np.float16), expected) == (True, "")
    ok, why = verify_host(drifting, expected)
    assert not ok and "wrong elements" in why


def test_float16_bench_on_the_host_verifies_every_record():
    result = run_benchmark(device="cpu", sizes=[8, 11], dtypes="float16", repeats=2, progress=False,
                           primitives=False, seed=5)
    recs = result["records"]
    assert {r["impl"] for r in recs} >= {"copy", "prefixscan", "numpy.cumsum"}
    assert {r["n"] for r in recs} == {256, 2048}
    for r in recs:
        assert r["verified"] and r["status"] == "ok", r
        assert r["dtype"] == "float16"
        assert r["gb_per_s"] == pytest.approx(r["gelem_per_s"] * 2 * 2)


def test_failed_float16_peer_leaves_the_run_and_prefixscan_ok(monkeypatch, tmp_path, capsys):
    """A peer whose result is wrong (here: zeros) is reported FAILED; the run goes
    on, prefixscan's records stay verified, exit status 0."""
    import prefixscan.benchmark as bench

    def zeros(ins, outs):
        return [lambda o=o: o for o in outs]

    peers = bench.cpu_peers
    monkeypatch.setattr(bench, "cpu_peers", lambda q, s: peers(q, s) + [Implementation("wrong", zeros, "cpu")])
    out = tmp_path / "half"
    status = main(["bench", "--sizes", "9", "--dtypes", "float16", "--repeats", "2", "--no-progress",
                   "--no-plot", "--primitives", "off", "--out", str(out)])
    text = capsys.readouterr().out
    assert status == 0, text
    by = {r["impl"]: r for r in json.loads((out / "results.json").read_text())["records"]}
    assert by["wrong"]["status"] == "FAILED" and by["wrong"]["seconds"] is None
    assert by["prefixscan"]["verified"] and by["prefixscan"]["seconds"] > 0


def test_failed_peer_next_to_prefixscan_in_one_case(rng):
    impls = [imp for imp in cpu_peers(1, 1) if imp.name in ("copy", "prefixscan")]
    impls.append(Implementation("wrong", lambda ins, outs: [lambda o=o: o for o in outs], "cpu"))
    recs = measure_host(impls, case_of("float16", 1000), rng, Progress(3, False), [])
    by = {r["impl"]: r for r in recs}
    assert by["wrong"]["status"] == "FAILED"
    assert by["prefixscan"]["verified"] and by["copy"]["verified"]


def test_bfloat16_on_the_cpu_is_refused_before_any_work(monkeypatch, tmp_path, capsys):
    import prefixscan.benchmark as bench

    def no_work(*args, **kwargs):
        raise AssertionError("the benchmark started")

    monkeypatch.setattr(bench, "cpu_peers", no_work)
    monkeypatch.setattr(bench, "measure_host", no_work)
    with pytest.raises(ValueError, match="--dtypes"):
        run_benchmark(device="cpu", sizes=[8], dtypes="float16,bfloat16", progress=False)
    out = tmp_path / "never"
    assert main(["bench", "--sizes", "8", "--dtypes", "bfloat16", "--no-progress", "--out", str(out)]) == 2
    assert "--dtypes" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_16_bit_floats_on_cuda_verify():
    result = run_benchmark(device="cuda", sizes=[16], dtypes="float16,bfloat16", impls=["prefixscan"],
                           repeats=3, progress=False, quick=True, seed=7)
    recs = result["records"]
    assert {(r["impl"], r["dtype"]) for r in recs} == {(i, d) for i in ("copy", "prefixscan")
                                                       for d in ("float16", "bfloat16")}
    for r in recs:
        assert r["verified"] and r["status"] == "ok", r
        assert r["n"] == 1 << 16 and r["seconds"] > 0
        assert r["gb_per_s"] == pytest.approx(r["gelem_per_s"] * 2 * 2)
    # the run says which tuning table the GPU's scans read
    tables = result["metadata"]["tuning_tables"]
    assert tables and all(": table: " in line for line in tables)
