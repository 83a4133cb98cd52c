"""The arguments of sort, argsort, unique and run_length_encode on every backend:
each bad one is refused with an error naming it, before any work (no backend entry
point runs) and with the inputs left as they were."""

from __future__ import annotations

import importlib
import importlib.util
import re

import numpy as np
import pytest

import prefixscan as ps


def _x(dtype="int32", shape=(5, 6)):
    return (np.arange(int(np.prod(shape))).reshape(shape) * 7 % 11).astype(dtype)


class Data:
    """A NumPy array the test hands over in the backend's array type."""

    def __init__(self, array):
        self.array = array


def _convert(backend, value):
    if isinstance(value, Data):
        return backend.asarray(value.array)
    if isinstance(value, tuple):
        return tuple(_convert(backend, v) for v in value)
    return value


@pytest.fixture
def sort_calls(monkeypatch):
    """The sort family's backend entry points called during the test."""
    modules = ["prefixscan.primitives.sort.cpu"]
    if importlib.util.find_spec("triton") is not None:
        modules.append("prefixscan.primitives.sort.triton")
    calls = []
    for name in modules:
        module = importlib.import_module(name)
        for entry in ("sort", "unique", "run_length_encode"):
            def spy(*args, _original=getattr(module, entry), _name=f"{name}.{entry}", **kwargs):
                calls.append(_name)
                return _original(*args, **kwargs)

            monkeypatch.setattr(module, entry, spy)
    return calls


SORT_CASES = [  # (id, error, names the message may use, args, kwargs)
    ("x-complex", TypeError, "x", (Data(_x("complex64")),), {}),
    ("x-strings", TypeError, "x", (np.array(["b", "a"]),), {}),
    ("axis-out-of-range", np.exceptions.AxisError, "axis", (Data(_x()),), dict(axis=2)),
    ("axis-negative-out-of-range", np.exceptions.AxisError, "axis", (Data(_x()),), dict(axis=-3)),
    ("axis-float", TypeError, "axis", (Data(_x()),), dict(axis=1.0)),
    ("axis-of-a-scalar", np.exceptions.AxisError, "axis", (Data(np.array(3)),), {}),
    ("descending-int", TypeError, "descending", (Data(_x()),), dict(descending=1)),
    ("descending-none", TypeError, "descending", (Data(_x()),), dict(descending=None)),
    ("key-bits-zero", ValueError, "key_bits", (Data(_x()),), dict(key_bits=0)),
    ("key-bits-wider-than-the-key", ValueError, "key_bits", (Data(_x("int16")),), dict(key_bits=17)),
    ("key-bits-float", TypeError, "key_bits", (Data(_x()),), dict(key_bits=3.0)),
    ("key-bits-bool", TypeError, "key_bits", (Data(_x()),), dict(key_bits=True)),
    ("key-bits-of-floats", TypeError, "key_bits", (Data(_x("float32")),), dict(key_bits=3)),
    ("backend-unknown", ValueError, "backend", (Data(_x()),), dict(backend="gpu")),
]
VALUES_CASES = [
    ("values-shape", ValueError, "values", (Data(_x()),), dict(values=Data(_x(shape=(6, 5))))),
    ("values-tuple-member-shape", ValueError, "values[1]", (Data(_x()),),
     dict(values=(Data(_x()), Data(_x(shape=(30,)))))),
    ("values-empty-tuple", ValueError, "values", (Data(_x()),), dict(values=())),
    ("values-strings", TypeError, "values", (Data(_x()),), dict(values=np.full((5, 6), "a"))),
]
UNIQUE_CASES = [
    ("x-2d", ValueError, "x", (Data(_x()),), {}),
    ("x-complex", TypeError, "x", (Data(_x("complex128", (6,))),), {}),
    ("return-index-int", TypeError, "return_index", (Data(_x(shape=(6,))),), dict(return_index=1)),
    ("return-inverse-str", TypeError, "return_inverse", (Data(_x(shape=(6,))),), dict(return_inverse="yes")),
    ("return-counts-none", TypeError, "return_counts", (Data(_x(shape=(6,))),), dict(return_counts=None)),
]
RLE_CASES = [
    ("x-2d", ValueError, "x", (Data(_x()),), {}),
    ("x-complex", TypeError, "x", (Data(_x("complex64", (6,))),), {}),
]


def _run(backend, sort_calls, function, error, name, args, kwargs):
    args = _convert(backend, args)
    kwargs = {k: _convert(backend, v) for k, v in kwargs.items()}
    kwargs.setdefault("backend", backend.backend)
    snapshots = [np.array(backend.to_numpy(a), copy=True) for a in args if not isinstance(a, np.ndarray)]
    with pytest.raises(error) as excinfo:
        function(*args, **kwargs)
    message = str(excinfo.value)
    assert re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", message), message
    assert sort_calls == [], f"work started before the error: {sort_calls}"
    for a, before in zip([a for a in args if not isinstance(a, np.ndarray)], snapshots):
        np.testing.assert_array_equal(backend.to_numpy(a), before)


@pytest.mark.parametrize("function", [ps.sort, ps.argsort], ids=["sort", "argsort"])
@pytest.mark.parametrize("error,name,args,kwargs", [c[1:] for c in SORT_CASES], ids=[c[0] for c in SORT_CASES])
def test_sort_and_argsort_refuse_before_any_work(backend, sort_calls, function, error, name, args, kwargs):
    _run(backend, sort_calls, function, error, name, args, kwargs)


@pytest.mark.parametrize("error,name,args,kwargs", [c[1:] for c in VALUES_CASES], ids=[c[0] for c in VALUES_CASES])
def test_sort_values_refused_before_any_work(backend, sort_calls, error, name, args, kwargs):
    _run(backend, sort_calls, ps.sort, error, name, args, kwargs)


@pytest.mark.parametrize("error,name,args,kwargs", [c[1:] for c in UNIQUE_CASES], ids=[c[0] for c in UNIQUE_CASES])
def test_unique_refuses_before_any_work(backend, sort_calls, error, name, args, kwargs):
    _run(backend, sort_calls, ps.unique, error, name, args, kwargs)


@pytest.mark.parametrize("error,name,args,kwargs", [c[1:] for c in RLE_CASES], ids=[c[0] for c in RLE_CASES])
def test_run_length_encode_refuses_before_any_work(backend, sort_calls, error, name, args, kwargs):
    _run(backend, sort_calls, ps.run_length_encode, error, name, args, kwargs)


@pytest.mark.gpu
def test_values_on_another_device_are_refused(sort_calls):
    """Keys on a GPU, values on the host (and the other way round): refused naming values."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    with pytest.raises(ValueError, match=r"^values is on "):
        ps.sort(torch.arange(6, device="cuda"), values=torch.arange(6))
    with pytest.raises(ValueError, match=r"^values\[0\] is on "):
        ps.sort(torch.arange(6), values=(torch.arange(6, device="cuda"),))
    assert sort_calls == []


def test_key_bits_outside_the_range_writes_nothing_and_names_key_bits():
    """The CPU's check of the keys against key_bits (data-dependent: it runs with the
    counting pass) raises ValueError naming key_bits; the input is unchanged."""
    x = np.array([1, 2, 9, 3] * 3000, np.int32)
    before = x.copy()
    for n in (12, x.size):
        with pytest.raises(ValueError, match="key_bits=3"):
            ps.argsort(x[:n], key_bits=3)
    np.testing.assert_array_equal(x, before)
