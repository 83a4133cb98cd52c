"""prefixscan.codecs: the numcodecs codec through numcodecs' own codec checks,
and both codecs in chunked Zarr arrays (format 2: numcodecs, format 3:
prefixscan.codecs.zarr3) written, reopened from disk by their stored names, and
read back."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

numcodecs = pytest.importorskip("numcodecs")
from numcodecs.tests.common import check_config, check_encode_decode  # noqa: E402

import prefixscan  # noqa: E402
from prefixscan.codecs import Delta  # noqa: E402

INT_DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]


def wrapping_data(dtype, n, seed):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    x = rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
    x[x == 0] = 1
    return x


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("order,tuple_size", [(1, 1), (2, 1), (3, 2), (5, 5), (8, 8), (1, 32), (4, 3)])
def test_numcodecs_round_trip(dtype, order, tuple_size):
    codec = Delta(order=order, tuple_size=tuple_size, dtype=dtype)
    n = 96 * 5 * 7  # divisible by every tuple size above
    arr = wrapping_data(dtype, n, order * 100 + tuple_size)  # full range: differences wrap
    check_encode_decode(arr, codec)
    check_encode_decode(arr.reshape(96, 35), codec)
    enc = codec.encode(arr)
    assert enc.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(codec.decode(enc), arr)


def test_encoded_values_are_differences():
    x = np.array([100, 102, 104, 107, 111], dtype="i4")
    np.testing.assert_array_equal(Delta(dtype="i4").encode(x), [100, 2, 2, 3, 4])
    np.testing.assert_array_equal(Delta(order=2, dtype="i4").encode(x), [100, -98, 0, 1, 1])
    np.testing.assert_array_equal(Delta(tuple_size=2, dtype="i4").encode(x[:4]), [100, 102, 4, 5])


def test_config_registry_and_repr():
    codec = Delta(order=3, tuple_size=4, dtype="<u2")
    check_config(codec)
    # numcodecs' check_repr evaluates in its own namespace, where Delta is its codec.
    assert repr(eval(repr(codec), {"Delta": Delta})) == repr(codec) == "Delta(order=3, tuple_size=4, dtype='<u2')"
    again = numcodecs.get_codec(codec.get_config())
    assert isinstance(again, Delta) and again.get_config() == codec.get_config()


FLOAT_DTYPES = ["float16", "float32", "float64", ">f8"]


def awkward_floats(dtype, n, seed):
    """Normal values over a wide range of magnitudes, and the values float
    arithmetic does not carry through a subtraction and an addition: NaNs with
    payloads, infinities, signed zeros, subnormals, the extremes."""
    dt = np.dtype(dtype)
    info = np.finfo(dt)
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(dt)
    special = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, info.tiny / 4, -info.tiny / 2, info.max,
                        info.min, info.eps], dtype=dt)
    x[rng.choice(n, special.size, replace=False)] = special
    bits = x.view(f"u{dt.itemsize}").copy()
    bits[np.isnan(x)] |= 1  # a NaN payload
    return bits.view(dt)


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("order,tuple_size", [(1, 1), (2, 1), (3, 2), (8, 5)])
def test_numcodecs_float_round_trip_is_exact(dtype, order, tuple_size):
    """Floats are coded by their bit patterns: the round trip is bit for bit (float
    differences lost up to 0.09 on float32 data at order 3)."""
    codec = Delta(order=order, tuple_size=tuple_size, dtype=dtype)
    x = awkward_floats(dtype, 96 * 5 * 7, order * 10 + tuple_size)
    enc = codec.encode(x)
    assert np.asarray(enc).dtype.kind == "i"  # integer differences of the bit patterns
    ints = x.view(x.dtype.str.replace("f", "i"))  # the bit patterns, in the data's byte order
    native = ints.dtype.newbyteorder("=")
    np.testing.assert_array_equal(np.asarray(enc).astype(native),
                                  prefixscan.delta_encode(ints.astype(native), order, tuple_size))
    assert same_bits(codec.decode(enc), x)
    assert same_bits(codec.decode(bytes(np.asarray(enc).tobytes())), x)
    out = np.full_like(x, 7)
    codec.decode(enc, out=out)
    assert same_bits(out, x)
    check_encode_decode(x, codec)


@pytest.mark.parametrize("dtype", [">i4", ">u2", ">f8", "<f4"])
def test_numcodecs_chunks_past_the_compiled_threshold(dtype):
    """Chunks of 8192 elements and more (the compiled CPU path), in either byte order:
    the stored words keep the codec's byte order, the values are the native codec's."""
    n = 3 * 8192 + 6
    dt = np.dtype(dtype)
    x = awkward_floats(dt, n, 11) if dt.kind == "f" else wrapping_data(dt.newbyteorder("="), n, 11).astype(dt)
    codec = Delta(order=2, tuple_size=3, dtype=dtype)
    enc = np.asarray(codec.encode(x))
    assert enc.dtype.byteorder == dt.byteorder or dt.byteorder in "=|"
    native = Delta(order=2, tuple_size=3, dtype=dt.newbyteorder("="))
    np.testing.assert_array_equal(enc, np.asarray(native.encode(x.astype(dt.newbyteorder("=")))))
    assert same_bits(codec.decode(enc), x)
    assert same_bits(codec.decode(enc.tobytes()), x)


def test_numcodecs_refuses_data_of_another_dtype():
    """Typed data must be of the codec's dtype: float64 through the default int64
    codec came back as int64 bit patterns."""
    x = np.random.default_rng(0).standard_normal(40)
    with pytest.raises(TypeError, match=r"dtype float64.*dtype='<f8'"):
        Delta().encode(x)
    with pytest.raises(TypeError, match="dtype int64"):
        Delta(dtype="float64").encode(np.arange(40))
    with pytest.raises(TypeError, match="dtype int64"):
        Delta(dtype="int32").encode(np.arange(40))
    with pytest.raises(TypeError, match="dtype"):
        Delta(dtype="U3")
    # Untyped buffers are read as the codec's dtype.
    codec = Delta(dtype="float64", order=2)
    assert same_bits(codec.decode(codec.encode(x.tobytes())), x)
    assert same_bits(codec.decode(codec.encode(x.view("u1"))), x)


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match="order"):
        Delta(order=0)
    with pytest.raises(ValueError, match="order"):  # above delta coding's limit: refused when made
        Delta(order=65)
    assert Delta(order=64).order == 64
    with pytest.raises(ValueError, match="tuple_size"):
        Delta(tuple_size=0)
    with pytest.raises(ValueError, match="tuple_size"):
        Delta(tuple_size=3, dtype="i4").encode(np.arange(10, dtype="i4"))


def test_torch_tensors_stay_tensors():
    torch = pytest.importorskip("torch")
    x = torch.from_numpy(wrapping_data("int32", 600, 7))
    codec = Delta(order=2, tuple_size=3, dtype="int32")
    enc = codec.encode(x)
    assert isinstance(enc, torch.Tensor)
    assert torch.equal(codec.decode(enc), x)
    for dtype in ("float32", "float64"):
        xf = awkward_floats(dtype, 600, 8)
        codec = Delta(order=3, tuple_size=2, dtype=dtype)
        enc = codec.encode(torch.from_numpy(xf))
        assert isinstance(enc, torch.Tensor) and not enc.dtype.is_floating_point
        dec = codec.decode(enc)
        assert isinstance(dec, torch.Tensor) and same_bits(dec.numpy(), xf)
    with pytest.raises(TypeError, match="dtype float32"):
        Delta(dtype="int32").encode(torch.zeros(6, dtype=torch.float32))


# ---------------------------------------------------------------------------
# Zarr arrays on disk.  zarr.open reopens each one from its stored metadata, which
# names the codec: ``prefixscan.delta`` in numcodecs' registry (format 2) and in
# zarr's (format 3).

ZARR_SHAPE, ZARR_CHUNKS = (13, 10), (6, 4)  # 24 elements a chunk: every tuple size 1-3 divides it


def _zarr():
    return pytest.importorskip("zarr", minversion="3")


def _create(zarr, path, fmt, dtype, order, tuple_size, compressed=True):
    if fmt == 3:
        from prefixscan.codecs.zarr3 import Delta as Zarr3Delta

        filters = [Zarr3Delta(order=order, tuple_size=tuple_size)]
    else:
        filters = [Delta(order=order, tuple_size=tuple_size, dtype=dtype)]
    extra = {} if compressed else {"compressors": None}
    return zarr.create_array(str(path), shape=ZARR_SHAPE, chunks=ZARR_CHUNKS, dtype=dtype, filters=filters,
                             zarr_format=fmt, **extra)


def _raw_first_chunk(path, fmt, dtype):
    name = "c/0/0" if fmt == 3 else "0.0"
    return np.frombuffer((Path(path) / name).read_bytes(), dtype=dtype)


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("dtype", ["int8", "uint16", "int32", "int64", "uint64"])
@pytest.mark.parametrize("order", [1, 2, 3])
@pytest.mark.parametrize("tuple_size", [1, 2, 3])
def test_zarr_round_trip(tmp_path, fmt, dtype, order, tuple_size):
    zarr = _zarr()
    x = wrapping_data(dtype, int(np.prod(ZARR_SHAPE)), 1000 * fmt + 10 * order + tuple_size).reshape(ZARR_SHAPE)
    path = tmp_path / f"a{fmt}.zarr"
    _create(zarr, path, fmt, dtype, order, tuple_size, compressed=False)[...] = x

    again = zarr.open_array(str(path), mode="r")  # a fresh open: the codec found by its stored name
    assert again.metadata.zarr_format == fmt
    np.testing.assert_array_equal(again[...], x)
    np.testing.assert_array_equal(again[3:11, 1:7], x[3:11, 1:7])  # chunks read partially
    # The stored chunk is the delta code of the chunk's elements in C order.
    chunk = x[:ZARR_CHUNKS[0], :ZARR_CHUNKS[1]].reshape(-1)
    np.testing.assert_array_equal(_raw_first_chunk(path, fmt, dtype),
                                  prefixscan.delta_encode(chunk, order, tuple_size))


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_zarr_float_round_trip_and_edit(tmp_path, fmt, dtype):
    """Float chunks round-trip bit for bit (they were coded by float differences,
    which lost up to 0.09 on float32 data at order 3), and what is stored is the
    delta code of their bit patterns."""
    zarr = _zarr()
    x = awkward_floats(dtype, int(np.prod(ZARR_SHAPE)), fmt).reshape(ZARR_SHAPE)
    path = tmp_path / "f.zarr"
    arr = _create(zarr, path, fmt, dtype, 3, 2, compressed=False)
    arr[...] = x
    arr[5:9, 2:3] = -1.5  # a partial chunk write: read, decode, change, encode
    x[5:9, 2:3] = -1.5
    got = zarr.open_array(str(path), mode="r")[...]
    assert same_bits(got, x)
    chunk = x[:ZARR_CHUNKS[0], :ZARR_CHUNKS[1]].reshape(-1)
    stored = _raw_first_chunk(path, fmt, f"i{x.itemsize}")
    np.testing.assert_array_equal(stored, prefixscan.delta_encode(chunk.view(f"i{x.itemsize}"), 3, 2))


def test_zarr3_metadata_and_registry(tmp_path):
    zarr = _zarr()
    from zarr.registry import get_codec_class

    from prefixscan.codecs.zarr3 import CODEC_NAME, Delta as Zarr3Delta

    codec = Zarr3Delta(order=3, tuple_size=2)
    assert codec.to_dict() == {"name": "prefixscan.delta",
                               "configuration": {"order": 3, "tuple_size": 2, "floats": "bits"}}
    assert Zarr3Delta.from_dict(codec.to_dict()) == codec
    # metadata written before floats were stored as their bits: the old coding
    assert Zarr3Delta.from_dict({"name": CODEC_NAME}) == Zarr3Delta(floats="differences")
    assert get_codec_class(CODEC_NAME) is Zarr3Delta
    path = tmp_path / "m.zarr"
    _create(zarr, path, 3, "int32", 3, 2)
    stored = json.loads((path / "zarr.json").read_text())["codecs"][0]
    assert stored == codec.to_dict()


def test_zarr3_errors_name_the_argument(tmp_path):
    zarr = _zarr()
    from prefixscan.codecs.zarr3 import Delta as Zarr3Delta

    with pytest.raises(ValueError, match="order"):
        Zarr3Delta(order=0)
    with pytest.raises(ValueError, match="order"):
        Zarr3Delta(order=2**70)
    with pytest.raises(ValueError, match="tuple_size"):
        Zarr3Delta(tuple_size=True)
    with pytest.raises(ValueError, match="unknown configuration"):
        Zarr3Delta.from_dict({"name": "prefixscan.delta", "configuration": {"dtype": "i4"}})
    with pytest.raises(ValueError, match="tuple_size=5"):  # chunks of 24 elements
        zarr.create_array(str(tmp_path / "e.zarr"), shape=ZARR_SHAPE, chunks=ZARR_CHUNKS, dtype="int32",
                          filters=[Zarr3Delta(tuple_size=5)])
    with pytest.raises(TypeError, match="integer or float"):
        zarr.create_array(str(tmp_path / "b.zarr"), shape=ZARR_SHAPE, chunks=ZARR_CHUNKS, dtype="bool",
                          filters=[Zarr3Delta()])


_READER = textwrap.dedent("""
    import sys
    from importlib.metadata import entry_points
    import numpy as np
    import zarr

    if not entry_points(group="zarr.codecs").select(name="prefixscan.delta"):
        sys.exit(77)  # this prefixscan install predates the entry point
    for fmt in (2, 3):
        np.testing.assert_array_equal(zarr.open_array(f"a{fmt}.zarr", mode="r")[...], np.load("x.npy"))
    print(sorted(m for m in sys.modules if m.startswith("prefixscan")))
""")


def test_zarr_reader_finds_the_codecs_by_entry_point(tmp_path):
    """A process that never imports prefixscan reads both arrays: zarr loads the
    format 3 codec through its ``zarr.codecs`` entry point, numcodecs the
    format 2 one through ``numcodecs.codecs``."""
    zarr = _zarr()
    x = wrapping_data("int16", int(np.prod(ZARR_SHAPE)), 5).reshape(ZARR_SHAPE)
    np.save(tmp_path / "x.npy", x)
    for fmt in (2, 3):
        _create(zarr, tmp_path / f"a{fmt}.zarr", fmt, "int16", 2, 3)[...] = x
    # Run in tmp_path: a stale prefixscan.egg-info in the checkout would hide the installed entry points.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-c", _READER], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    if proc.returncode == 77:
        pytest.skip("the installed prefixscan metadata has no zarr.codecs entry point (reinstall: pip install -e .)")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    loaded = proc.stdout.strip().splitlines()[-1]
    assert "prefixscan.codecs.zarr3" in loaded and "prefixscan.codecs.numcodecs_delta" in loaded


def test_import_does_not_import_zarr():
    code = ("import sys, prefixscan, prefixscan.codecs; "
            "sys.exit(1 if any(m == 'zarr' or m.startswith('zarr.') for m in sys.modules) else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.gpu
def test_zarr3_gpu_buffers_round_trip(tmp_path):
    """With zarr's GPU buffers the chunks reach the codec as CuPy arrays, which the delta
    code runs on the GPU (zero-copy through DLPack) and hands back as CuPy arrays."""
    zarr = _zarr()
    cupy = pytest.importorskip("cupy")
    if not cupy.cuda.is_available():
        pytest.skip("needs a CUDA device")
    x = wrapping_data("int32", int(np.prod(ZARR_SHAPE)), 77).reshape(ZARR_SHAPE)
    path = tmp_path / "gpu.zarr"
    with zarr.config.enable_gpu():
        array = _create(zarr, path, 3, "int32", 2, 2, compressed=False)
        array[...] = cupy.asarray(x)
        got = zarr.open_array(str(path), mode="r")[...]
        assert isinstance(got, cupy.ndarray)
        np.testing.assert_array_equal(cupy.asnumpy(got), x)
    chunk = x[:ZARR_CHUNKS[0], :ZARR_CHUNKS[1]].reshape(-1)
    np.testing.assert_array_equal(_raw_first_chunk(path, 3, "int32"), prefixscan.delta_encode(chunk, 2, 2))
    np.testing.assert_array_equal(zarr.open_array(str(path), mode="r")[...], x)  # host buffers read it back


def test_configurations_without_floats_decode_float_differences():
    """A configuration without ``floats`` was written when float chunks were coded as
    float differences: such chunks still decode (as floats), and the codec refuses to
    write new ones; integer chunks are the same either way."""
    from prefixscan.codecs import Delta

    x = np.array([0.5, 1.25, -3.0, 2.0, 7.5, 7.5], dtype=np.float64)
    old_bytes = prefixscan.delta_encode(x, 2, 1).tobytes()  # what the earlier codec stored
    legacy = Delta.from_config({"id": "prefixscan.delta", "order": 2, "tuple_size": 1, "dtype": "<f8"})
    assert legacy.floats == "differences"
    np.testing.assert_allclose(legacy.decode(old_bytes), x)
    with pytest.raises(ValueError, match="floats"):
        legacy.encode(x)
    fresh = Delta(order=2, tuple_size=1, dtype="<f8")
    assert fresh.get_config()["floats"] == "bits"
    assert Delta.from_config(fresh.get_config()).decode(fresh.encode(x)).tobytes() == x.tobytes()
    zarr3 = pytest.importorskip("prefixscan.codecs.zarr3")
    old = zarr3.Delta.from_dict({"name": "prefixscan.delta", "configuration": {"order": 2, "tuple_size": 1}})
    assert old.floats == "differences" and zarr3.Delta(order=2).floats == "bits"
    ints = np.arange(10, dtype=np.int32) ** 2
    legacy_int = Delta.from_config({"id": "prefixscan.delta", "order": 1, "tuple_size": 1, "dtype": "<i4"})
    assert legacy_int.decode(legacy_int.encode(ints)).tobytes() == ints.tobytes()


def test_typed_chunks_of_the_other_byte_order_are_converted():
    """A native int32 chunk given to a '>i4' codec is the same numbers (not reinterpreted bytes)."""
    from prefixscan.codecs import Delta

    x = np.arange(1, 9, dtype=np.int32) * 3
    codec = Delta(order=1, tuple_size=1, dtype=">i4")
    decoded = np.asarray(codec.decode(codec.encode(x)))
    np.testing.assert_array_equal(decoded.astype(np.int32), x)
