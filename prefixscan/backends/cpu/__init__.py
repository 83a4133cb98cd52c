"""CPU backend: compiled single-pass kernels (Numba), vectorized NumPy as the fallback.

Where Numba is installed, every scan of at least a few thousand elements runs as
one compiled loop reading and writing each element once
(:mod:`prefixscan.backends.cpu.compiled`); tiny inputs, scan networks
(``algorithm=``) and combines Numba cannot compile take the NumPy path below,
which runs anywhere.  NumPy path: lanes are laid out as ``(lanes, n / s, s)`` arrays (s = tuple_size) and scanned
along axis 1, all lanes and streams at once.  Built-in operators with a NumPy
ufunc run the serial (chained) scan in C through ``ufunc.accumulate``; other
monoids run a scan network level by level (:mod:`prefixscan.networks`), each
level one vectorized call of the monoid's ``combine``.  Higher orders repeat the
whole scan; the working buffer is the only temporary.

Implements :class:`prefixscan.backends.base.Backend` as a module.  The other
primitives' CPU implementations (NumPy paths and compiled passes) live with each
primitive, in :mod:`prefixscan.primitives` (their ``cpu`` modules), on the
shared compiled machinery of :mod:`.compiled`.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..._arrays import as_numpy, write_host
from ..._request import ScanRequest, np_dtype
from ...monoid import is_truth_value_error
from ...networks import run_network
from . import compiled

NAME = "cpu"
DEVICES = ("cpu",)
NATIVE_LIBRARY = "numpy"  # run_scan returns NumPy arrays
TAKES_ALGORITHM = True  # algorithm= picks a network of prefixscan.networks
TAKES_STRATEGY = False  # strategy= names GPU strategies
COMPLEX_TYPES = True


def unavailable_reason(device: str) -> str:
    if device == "cpu":
        return ""
    return ("the CPU backend takes host arrays; copy the data to the host first "
            "or use backend='triton' (or None) for device arrays")


def device_names() -> list[str]:
    if compiled.available():
        return ["cpu (compiled kernels: Numba)"]
    return [f"cpu (NumPy only; {compiled.unavailable_reason()})"]


def field_combine(monoid, nfields: int):
    """``combine`` lifted to tuples of field arrays."""
    combine = monoid.combine
    if nfields == 1:
        return lambda a, b: (combine(a[0], b[0]),)
    return lambda a, b: tuple(combine(tuple(a), tuple(b)))


def to_lanes(x: np.ndarray, request: ScanRequest) -> np.ndarray:
    """View (or copy) x as (lanes, n / s, s) with the scanned axis in the middle."""
    s = request.config.tuple_size
    n = request.lane_len
    if request.axis is None:
        return x.reshape(1, n // s, s)
    lanes = int(np.prod(request.lanes_shape, dtype=np.int64))
    return np.moveaxis(x, request.axis, -1).reshape(lanes, n // s, s)


def from_lanes(y: np.ndarray, request: ScanRequest) -> np.ndarray:
    if request.axis is None:
        return y.reshape(request.out_shape)
    y = y.reshape(request.lanes_shape + (request.lane_len,))
    return np.moveaxis(y, -1, request.axis)


def _init_lanes(request: ScanRequest) -> list[np.ndarray] | None:
    if request.init is None:
        return None
    s = request.config.tuple_size
    lanes = int(np.prod(request.lanes_shape, dtype=np.int64))
    result = []
    for value, acc in zip(request.init, request.acc_dtypes):
        value = np.asarray(value.cpu() if hasattr(value, "cpu") else value).astype(np_dtype(acc))
        result.append(np.broadcast_to(value, request.init_shape).reshape(lanes, s))
    return result


def scan_lanes(fields: list[np.ndarray], request: ScanRequest) -> None:
    """One application of the configured scan, in place on (lanes, m, s) arrays."""
    config = request.config
    monoid = config.monoid
    combine = field_combine(monoid, len(fields))
    if config.reverse:
        fields = [f[:, ::-1] for f in fields]
        forward = combine
        combine = lambda a, b: forward(b, a)  # noqa: E731 - operands stay in index order
    init = _init_lanes(request)
    if init is not None:
        seeded = combine(tuple(init), tuple(f[:, 0] for f in fields))
        for f, v in zip(fields, seeded):
            f[:, 0] = v
    algorithm = config.algorithm
    if monoid.ufunc is not None and algorithm in ("auto", "serial") and len(fields) == 1:
        monoid.ufunc.accumulate(fields[0], axis=1, out=fields[0])
    else:
        run_network("brent_kung" if algorithm == "auto" else algorithm, fields, combine)
    if not config.inclusive:
        start = init if init is not None else request.identity
        for f, first in zip(fields, start):
            f[:, 1:] = f[:, :-1].copy()
            f[:, 0] = first


def _direct_ufunc(request: ScanRequest):
    """The ufunc that scans ``request`` in one accumulate from input to output, no
    working copy (a built-in operator, inclusive, no seed, one stream, order 1), or None."""
    config = request.config
    ufunc = config.monoid.ufunc
    if (ufunc is None or config.algorithm not in ("auto", "serial") or not config.inclusive
            or request.init is not None or config.tuple_size != 1 or config.order != 1
            or len(request.fields) != 1 or request.fields[0].library not in ("numpy", "other")
            or request.acc_dtypes[0] != request.out_dtypes[0] or request.out_dtypes[0] == "bfloat16"):
        return None
    return ufunc


def _raises_after_writing(acc_dtype: str) -> bool:
    """Whether a float ``ufunc.accumulate`` may raise after writing its whole output:
    NumPy tests the floating-point flags at the end, and the caller's
    ``numpy.errstate`` may turn overflow or invalid results into exceptions, or into
    warnings that the caller's warning filters turn into exceptions (``-W error``,
    ``warnings.simplefilter("error")``).  Then ``out`` is written only after the
    accumulate has succeeded."""
    if np.dtype(acc_dtype).kind not in "fc":
        return False
    modes = np.geterr().values()
    if any(v in ("raise", "call") for v in modes):
        return True
    return "warn" in modes and _warning_may_raise(RuntimeWarning)


def _warning_may_raise(category: type) -> bool:
    """Whether the warning filters may turn a warning of ``category`` into an exception:
    the first filter of its category (or a base) that matches every such warning
    decides; an "error" filter limited to some messages or modules counts as raising
    (NumPy's message and the warning's module are not known here)."""
    for action, message, cat, module, lineno in warnings.filters:
        if not issubclass(category, cat):
            continue
        if action == "error":
            return True
        if message is None and module is None and not lineno:
            return False
    return False


def _direct_accumulate(request: ScanRequest):
    """The common case in one ufunc call from input to output, no working copy."""
    config = request.config
    ufunc = _direct_ufunc(request)
    if ufunc is None:
        return None
    x = np.asarray(request.fields[0].obj)
    axis = 0 if request.axis is None else request.axis
    if request.axis is None:
        x = x.reshape(-1)
    if config.reverse:
        x = np.flip(x, axis)
    out = None
    if (request.out is not None and request.out[0].library == "numpy"
            and not np.shares_memory(request.out[0].obj, request.fields[0].obj)
            and not _raises_after_writing(request.acc_dtypes[0])):
        out = request.out[0].obj
    result_view = np.flip(out, axis) if (out is not None and config.reverse) else out
    y = ufunc.accumulate(x, axis=axis, dtype=request.acc_dtypes[0], out=result_view)
    if out is not None:
        return [out]
    y = np.flip(y, axis) if config.reverse else y
    if request.out is not None:
        write_host(request.out[0], y)
        return [request.out[0].obj]
    return [np.ascontiguousarray(y)]


def run_scan(request: ScanRequest) -> list:
    """Scan on the host; returns NumPy results (written into ``out`` when given)."""
    results = compiled.run_scan(request)
    if results is not None:
        return results
    if request.fields[0].shape and request.lane_len and 0 not in request.fields[0].shape:
        direct = _direct_accumulate(request)
        if direct is not None:
            return direct
    work = []
    for ref, acc in zip(request.fields, request.acc_dtypes):
        x = as_numpy(ref)
        if request.axis is None:
            x = x.reshape(-1)
        work.append(to_lanes(x, request).astype(np_dtype(acc), copy=True))
    if work[0].size:
        try:
            with np.errstate(**request.config.monoid.numpy_errstate):
                for _ in range(request.config.order):
                    scan_lanes(work, request)
        except ValueError as exc:  # a data-dependent Python branch the up-front probe missed
            if is_truth_value_error(exc):
                raise request.config.monoid.truth_value_error() from exc
            raise
    # Every field cast to its output dtype (which may raise, under the caller's
    # numpy.errstate) before the first is written into out.
    results = [np.ascontiguousarray(from_lanes(w, request).astype(np_dtype(out_dtype), copy=False))
               for w, out_dtype in zip(work, request.out_dtypes)]
    if request.out is None:
        return results
    for ref, y in zip(request.out, results):
        write_host(ref, y)
    return [ref.obj for ref in request.out]


def run_scan_planned(request: ScanRequest) -> tuple[list, "_AccumulateReplay | None"]:
    """``run_scan``, and for a small scan that one ufunc accumulate runs, a replay
    that calls it straight from x to out on later calls of the same signature (at
    n = 1024 the checks and the request cost several times the accumulate)."""
    results = run_scan(request)
    ufunc = _direct_ufunc(request)
    if (ufunc is None or request.config.reverse or compiled.takes(request)
            or request.fields[0].library != "numpy" or not request.fields[0].shape
            or (request.out is not None and request.out[0].library != "numpy")):
        return results, None
    return results, _AccumulateReplay(ufunc, request.axis, np_dtype(request.acc_dtypes[0]))


class _AccumulateReplay:
    """``ufunc.accumulate`` of a NumPy array into a new array or ``out`` (None when
    ``out`` may overlap x: the full path copes with that)."""

    def __init__(self, ufunc, axis, dtype):
        self.ufunc, self.axis, self.dtype = ufunc, axis, dtype
        self.inexact = dtype.kind in "fc"

    def expired(self) -> bool:
        return False

    def __call__(self, x, out, init=None):  # planned only for unseeded scans: init is None
        if self.axis is None and x.ndim != 1:
            x = x.reshape(-1)
        if out is None:
            return np.ascontiguousarray(self.ufunc.accumulate(x, axis=self.axis or 0, dtype=self.dtype))
        if np.may_share_memory(x, out) or (self.inexact and _raises_after_writing(self.dtype)):
            return None
        self.ufunc.accumulate(x, axis=self.axis or 0, dtype=self.dtype, out=out)
        return out
