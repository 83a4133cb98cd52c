"""The scan itself: :func:`scan`, :func:`make_scan` and :class:`Scan`.

Two levels, as in cuda.compute: :func:`make_scan` returns a reusable
:class:`Scan` (operator, axis, direction, order, tuple size, dtype and backend
checked once); :func:`scan` is the one-shot call, which shares one :class:`Scan`
per argument set.  Every call goes argument checking
(:mod:`prefixscan._normalize`) -> backend dispatch (:mod:`prefixscan.dispatch`)
-> backend (:class:`prefixscan.backends.base.Backend`) -> kernels.  The other
primitives (``cumsum``, ``linear_recurrence``, ...; the other folders of
:mod:`prefixscan.primitives`) scan through this module, below the public surface
(:mod:`prefixscan.api`, which re-exports them all), so imports point one way.

A scan computes all prefixes of an associative operator (Blelloch 1990,
"Prefix sums and their applications", section 1); see ``docs/semantics.md`` for
the same definitions as a table.
"""

from __future__ import annotations

import weakref
from dataclasses import replace

import numpy as np

from ... import dispatch
from ..._arrays import from_native, is_dask_collection, is_tensor_type, unalias, write_result, write_results
from ..._normalize import build_request, check_init, make_config
from ..._request import ScanRequest
from ..._typing import AlgorithmName, ArrayOrFields, BackendName, DTypeLike, InitLike, OpLike, StrategyName
from ...backends.base import Backend
from ...caches import register_cache
from .routing import wants_torch_ops

__all__ = ["Scan", "make_scan", "scan", "shared_scan", "run_shared"]

# At most this many planned signatures per Scan, and one-shot Scans in _SCANS:
# a bound on memory for callers that scan ever-changing shapes.
_MAX_PLANS = 64
_MAX_ONE_SHOT_SCANS = 256


class Scan:
    """A configured scan, reusable across calls: ``s = make_scan(op, ...); s(x)``.

    The data-independent arguments (everything of :func:`scan` but ``x``,
    ``init`` and ``out``) are checked once, at construction; see :func:`scan`
    for their meaning.  Calling the object checks the arrays and runs the scan.
    Calls on NumPy arrays or torch tensors of a signature seen before (type,
    shape, dtype, device, and ``out``'s) skip the checks and reuse the plan; a
    single-launch GPU scan then goes straight to its kernel.  Where the plan is a
    shipped sum's (``backends/triton/aot``), a 1-D tensor of a new length in the same
    power-of-two length class reuses it too, only what depends on the length redone.

    Attributes
    ----------
    config : prefixscan._request.ScanConfig
        The checked, normalized configuration.
    """

    def __init__(self, op: OpLike = "add", *, axis: int | None = None, inclusive: bool = True, reverse: bool = False,
                 order: int = 1, tuple_size: int = 1, dtype: DTypeLike | None = None,
                 backend: BackendName | None = None, algorithm: AlgorithmName | None = None,
                 deterministic: bool = False, strategy: StrategyName | None = None) -> None:
        self.config = make_config(op, axis=axis, inclusive=inclusive, reverse=reverse, order=order,
                                  tuple_size=tuple_size, dtype=dtype, backend=backend,
                                  algorithm=algorithm, deterministic=deterministic, strategy=strategy)
        # signature -> (request without arrays, backend, replay or None); a replay made
        # from a length class's plan has no request: (None, backend, replay)
        self._plans: dict = {}
        # length class of unseeded 1-D torch calls -> (backend, replay with for_length): _run_class
        self._classes: dict = {}
        _LIVE_SCANS.add(self)

    def plan(self, x: ArrayOrFields, *, init: InitLike | None = None,
             out: ArrayOrFields | None = None) -> tuple[ScanRequest, Backend]:
        """Check the arrays and pick the backend, without running anything.

        Returns the checked request and the backend that would run it; raises
        what :meth:`__call__` would raise for these arguments.
        """
        request = build_request(self.config, x, init, out)
        backend = dispatch.select_backend(self.config.backend, request.device)
        dispatch.check_capabilities(backend, request)
        return request, backend

    def __call__(self, x: ArrayOrFields, *, init: InitLike | None = None,
                 out: ArrayOrFields | None = None) -> ArrayOrFields:
        """Scan ``x`` (seeded with ``init``, written into ``out`` when given); see
        :func:`scan` for the arguments and the result."""
        if type(x) is not np.ndarray and is_dask_collection(x):
            from . import dask as chunked  # imports dask: x is a dask array

            return chunked.scan(self.config, x, init=init, out=out)
        if type(x) is not np.ndarray and wants_torch_ops(x, init):
            # Autograd records it or torch.compile traces it: the differentiable custom operator.
            from .tensors import differentiable_scan  # imports torch: x is a tensor

            return differentiable_scan(self.config, x, init, out)
        return self._run(x, init, out)

    def _run(self, x, init, out):
        """The scan of ``x`` once dask collections and autograd/torch.compile calls
        have taken their own paths (:func:`scan` tests those itself, once)."""
        # Repeated calls on tensors of one signature reuse the checked plan:
        # small scans are dominated by host overhead, not by the kernel.  A seed is
        # checked every call (its values decide what is valid); only whether there is
        # one is part of the plan.  A replay declines an out that may overlap x, so that
        # only the full path needs x unaliased (an out that overlaps x, but for out=x,
        # gets a copy of x to read).
        key = _signature(x, out)
        if key is not None:
            key = (key, init is not None)
        cached = self._plans.get(key) if key is not None else None
        if cached is not None and cached[0] is None:
            # A replay made from its length class's plan (_run_class), without a request
            # of its own.  Expired, this length is planned in full; declining one call (the
            # shipped kernels switched off, a profiler's hooks or a recording on), it stays
            # the plan and that call alone takes the full checks and path, as a full plan's
            # replay does below (planning in full then would keep that call's path).
            fast = cached[2]
            if fast.expired():
                self._plans.pop(key, None)  # (another thread may have dropped it)
            else:
                result = fast(x, out, None)
                if result is not None:
                    return result
                request, backend = self.plan(unalias(x, out), init=init, out=out)
                return self._finish(request, backend, backend.run_scan(request))
            cached = None
        elif cached is None and self._classes and key is not None and not key[1]:
            result = self._run_class(key[0], x, out)
            if result is not None:
                return result
        if cached is not None:
            request, backend, fast = cached
            seeds = None if init is None else check_init(init, request.acc_dtypes, request.struct,
                                                         request.init_shape)
            if fast is not None:  # a single-launch GPU scan: straight to the kernel
                if fast.expired():  # the tile choice may have changed since: plan again
                    del self._plans[key]
                    return self._run(x, init, out)
                cast = request.cast_out is not None
                # (cast: the result is a new array, copied into out once complete)
                result = fast(x, None if cast else out, None if seeds is None else seeds[0])
                if result is not None:
                    if cast:
                        write_result(replace(request.cast_out[0], obj=out), result)
                        return out
                    return result
            request = request.rebind(unalias(x, out), out)
            request.init = seeds
            results = backend.run_scan(request)
        else:
            request, backend = self.plan(unalias(x, out), init=init, out=out)
            fast = None
            if key is not None and not request.struct:
                results, fast = backend.run_scan_planned(request)
            else:
                results = backend.run_scan(request)
            if key is not None:
                if len(self._plans) > _MAX_PLANS:
                    self._plans.clear()
                kept = request.rebind(None, None)
                kept.init = None  # not the first call's seed: it would stay alive
                self._plans[key] = (kept, backend, fast)
                length_class = _length_class(key[0]) if fast is not None and not key[1] else None
                if length_class is not None and request.cast_out is None \
                        and getattr(fast, "for_length", None) is not None:
                    if len(self._classes) >= _MAX_PLANS:
                        self._classes.clear()
                    self._classes[length_class] = (backend, fast)
        return self._finish(request, backend, results)

    @staticmethod
    def _finish(request, backend, results):
        """What a call returns once ``backend`` scanned ``request`` into ``results``."""
        native = backend.NATIVE_LIBRARY
        if request.cast_out is not None:  # out of another dtype: cast into it now that the scan succeeded
            write_results(request.cast_out, results)
            results = [o.obj for o in request.cast_out]
        elif request.out is not None:
            # The caller's own objects (a CuPy out= is run through a torch view).
            results = [o.obj for o in request.out]
        elif request.fields[0].library != native:
            results = [from_native(r, like, native, d)
                       for r, like, d in zip(results, request.fields, request.out_dtypes)]
        return tuple(results) if request.struct else results[0]

    def _run_class(self, signature: tuple, x, out):
        """The scan of an unseeded 1-D ``x`` of a new length through the plan of its
        length class (:func:`_length_class`), or None (no such plan, or it does not
        apply: the caller plans the call in full).

        The class's plan was checked in full for a signature that differs from this one
        only in the length, so what is left to check is what depends on the length:
        ``out``'s shape here (a wrong one is left to the full checks, which raise), the
        rest by the replay's ``for_length(x)`` (the variant of the length, its tile
        count and grid, the length against the variant's), which returns None where the
        full path must decide.  The replay it makes is kept as this signature's plan."""
        length_class = _length_class(signature)
        entry = self._classes.get(length_class) if length_class is not None else None
        if entry is None:
            return None
        backend, fast = entry
        if fast.expired():
            self._classes.pop(length_class, None)
            return None
        derived = fast.for_length(x)
        if derived is None:
            return None
        result = derived(x, out, None)
        if result is None:
            return None
        if len(self._plans) > _MAX_PLANS:
            self._plans.clear()
        self._plans[(signature, False)] = (None, backend, derived)
        return result

    def __repr__(self) -> str:
        c = self.config
        return (f"Scan(op={c.monoid.name!r}, axis={c.axis}, inclusive={c.inclusive}, reverse={c.reverse}, "
                f"order={c.order}, tuple_size={c.tuple_size}, dtype={c.dtype}, backend={c.backend})")


def _signature(x, out):
    """Everything the checks depend on, for NumPy arrays and torch tensors; None
    for other inputs (they take the full checks every call).  (Shapes are kept as
    ``torch.Size``, a tuple.)"""
    cls = type(x)
    if cls is np.ndarray:
        if out is None:
            return (np.ndarray, x.shape, x.dtype, None)
        if type(out) is np.ndarray:
            return (np.ndarray, x.shape, x.dtype, (out.shape, out.dtype, out.strides, out.flags.writeable))
        return None
    if not is_tensor_type(cls):
        return None
    if out is None:
        out_sig = None
    elif type(out) is cls:
        out_sig = (out.shape, out.dtype, out.device, out.stride(), out.requires_grad)
    else:
        return None
    return (cls, x.shape, x.dtype, x.device, out_sig)


def _length_class(signature: tuple):
    """The length class of a torch signature (:func:`_signature`) of a 1-D ``x`` of n > 0
    elements whose ``out``, if any, has x's shape: the signature without the shapes, and
    ``(n - 1).bit_length()``; None for others.  Lengths of a class share the planned
    variant of a shipped sum (``backends/triton/aot``), which only counts tiles per
    length."""
    if signature[0] is np.ndarray:
        return None
    kind, shape, dtype, device, out_sig = signature
    if len(shape) != 1 or shape[0] == 0:
        return None
    if out_sig is not None:
        if out_sig[0] != shape:
            return None
        out_sig = out_sig[1:]
    return (kind, dtype, device, out_sig, (shape[0] - 1).bit_length())


# Every Scan, so that clear_caches() can drop the plans of those the caller holds.
_LIVE_SCANS: weakref.WeakSet = weakref.WeakSet()
# One Scan per hashable argument set of scan(), so that one-shot calls share plans.
_SCANS: dict = {}


def _clear_plans() -> None:
    for s in list(_LIVE_SCANS):
        s._plans.clear()
        s._classes.clear()


register_cache("prefixscan.primitives.scan.api.one_shot_scans", _SCANS.clear)
register_cache("prefixscan.primitives.scan.api.plans", _clear_plans)


def shared_scan(op, *, axis, inclusive, reverse, order, tuple_size, dtype, backend, algorithm,
                deterministic, strategy=None) -> Scan:
    """The shared :class:`Scan` of this argument set (a new one for unhashable arguments):
    the one :func:`scan` calls, and :mod:`prefixscan.distributed` for its pieces."""
    # Types are part of the key: axis=1.0 must fail its check, not hit axis=1's entry.
    key = (op, axis, type(axis), inclusive, type(inclusive), reverse, type(reverse), order, type(order),
           tuple_size, type(tuple_size), dtype, type(dtype), backend, algorithm, deterministic,
           type(deterministic), strategy)
    try:
        found = _SCANS.get(key)
    except TypeError:  # unhashable argument: no caching
        return Scan(op, axis=axis, inclusive=inclusive, reverse=reverse, order=order, tuple_size=tuple_size,
                    dtype=dtype, backend=backend, algorithm=algorithm, deterministic=deterministic,
                    strategy=strategy)
    if found is None:
        if len(_SCANS) > _MAX_ONE_SHOT_SCANS:
            _SCANS.clear()
        found = _SCANS[key] = Scan(op, axis=axis, inclusive=inclusive, reverse=reverse, order=order,
                                   tuple_size=tuple_size, dtype=dtype, backend=backend, algorithm=algorithm,
                                   deterministic=deterministic, strategy=strategy)
    return found


def make_scan(op: OpLike = "add", *, axis: int | None = None, inclusive: bool = True, reverse: bool = False,
              order: int = 1, tuple_size: int = 1, dtype: DTypeLike | None = None,
              backend: BackendName | None = None, algorithm: AlgorithmName | None = None,
              deterministic: bool = False, strategy: StrategyName | None = None) -> Scan:
    """A reusable scan: ``s = make_scan(op, ...)``, then ``s(x, init=None, out=None)``.

    The arguments are :func:`scan`'s but the arrays (``x``, ``init``, ``out``,
    given to each call), with the same meaning and defaults; they are checked
    now, so a bad operator or axis fails here rather than at the first call.
    Use it in loops: a :class:`Scan` keeps the plans of the signatures it has
    seen, which makes repeated small scans cheaper.

    Parameters
    ----------
    op : str, NumPy ufunc or Monoid, default "add"
        The associative operator: a built-in name (``"add"``, ``"mul"``,
        ``"max"``, ``"min"``, ``"and"``, ``"or"``, ``"xor"``, ``"logaddexp"``),
        its NumPy ufunc (``numpy.add``, ``numpy.maximum``, ...), or a
        :class:`~prefixscan.Monoid` (an associative ``combine`` and its
        identity; a tuple identity scans a struct of arrays).
    axis : int or None, default None
        None scans the flattened array and returns 1-D, as ``numpy.cumsum``
        does; an integer (negative counts from the end) scans every lane along
        that axis.
    inclusive : bool, default True
        Inclusive (``y[i]`` combines ``x[0] .. x[i]``) or exclusive (``x[0] ..
        x[i-1]``, the first element the seed or the identity).
    reverse : bool, default False
        Scan from the end of each lane; operands stay in index order.
    order : int, default 1
        Apply the scan this many times (1 to 64); the GPU runs every order in
        one pass.
    tuple_size : int, default 1
        Interleaved independent streams per lane (element ``m + j*s`` belongs
        to stream m); it must divide the lane length of each call's ``x``.
    dtype : dtype, optional
        The accumulation and output dtype (a NumPy or torch dtype, or its
        name); by default the input's, float16 and bfloat16 accumulating in
        float32.
    backend : {None, "cpu", "triton"}, default None
        None: the GPU backend for device arrays, the CPU backend for host
        arrays; a named backend that cannot take a call's arrays is an error.
    algorithm : str, optional
        CPU backend only: the scan network, None or ``"auto"``, ``"serial"``,
        ``"kogge_stone"``, ``"sklansky"``, ``"brent_kung"``,
        ``"reduce_then_scan"``.
    deterministic : bool, default False
        GPU backend: only strategies whose floating-point results are bitwise
        reproducible from run to run.
    strategy : str, optional
        GPU backend only: how carries travel between tiles, None or ``"auto"``,
        ``"decoupled_lookback"``, ``"chained"``, ``"reduce_then_scan"``,
        ``"scan_then_propagate"``, ``"persistent"``.

    :func:`scan` describes each argument in full.

    Returns
    -------
    Scan
        Call it as ``s(x, init=None, out=None)``; ``s.plan(x)`` checks the arrays
        and names the backend without running.

    Raises
    ------
    TypeError, ValueError
        An argument :func:`scan` would refuse (an unknown operator, a
        non-integer axis, an order outside 1..64, ``algorithm`` /
        ``strategy`` not among their names); the message names it.

    Examples
    --------
    >>> import numpy as np, prefixscan
    >>> running_max = prefixscan.make_scan("max", axis=-1)
    >>> running_max(np.array([[3, 1, 4], [1, 5, 9]]))
    array([[3, 3, 4],
           [1, 5, 9]])
    """
    return Scan(op, axis=axis, inclusive=inclusive, reverse=reverse, order=order,
                tuple_size=tuple_size, dtype=dtype, backend=backend, algorithm=algorithm,
                deterministic=deterministic, strategy=strategy)


def scan(x: ArrayOrFields, op: OpLike = "add", *, axis: int | None = None, inclusive: bool = True,
         reverse: bool = False, init: InitLike | None = None, order: int = 1, tuple_size: int = 1,
         dtype: DTypeLike | None = None, out: ArrayOrFields | None = None, backend: BackendName | None = None,
         algorithm: AlgorithmName | None = None, deterministic: bool = False,
         strategy: StrategyName | None = None) -> ArrayOrFields:
    """Prefix scan of ``x`` with the associative operator ``op``.

    Below ``⊕`` is the operator and ``x[0], ..., x[n-1]`` one lane; the left
    operand of ``⊕`` always holds the earlier (lower-index) elements, so the
    operator need not be commutative.

    Parameters
    ----------
    x : array or tuple of arrays
        A NumPy array or anything NumPy can convert (lists, objects with
        ``__array__``), a torch tensor, or a device array (CuPy, JAX or anything
        with ``__dlpack__`` / ``__cuda_array_interface__`` on a CUDA device);
        device arrays are viewed without a copy.  For an operator over a struct
        of arrays (a :class:`~prefixscan.Monoid` whose identity is a tuple, e.g.
        :data:`prefixscan.AFFINE`), a tuple of same-shape arrays on one device,
        one per field.  Numeric or bool dtypes, bfloat16 included.
    op : str, NumPy ufunc or Monoid, default "add"
        A built-in operator: ``"add"``, ``"mul"``, ``"max"``, ``"min"``,
        ``"and"``, ``"or"``, ``"xor"`` (integers and bool), ``"logaddexp"``
        (floats); ``"max"``/``"min"`` propagate NaN as NumPy does.  Their NumPy
        ufuncs name them too: ``numpy.add``, ``numpy.multiply``,
        ``numpy.maximum``, ``numpy.minimum``, ``numpy.bitwise_and``,
        ``numpy.bitwise_or``, ``numpy.bitwise_xor``, ``numpy.logaddexp``
        (another ufunc raises ValueError).  Or a :class:`~prefixscan.Monoid`:
        an associative ``combine(a, b)`` written with arithmetic, comparisons
        and the helpers of :mod:`prefixscan.monoid` (so the same function runs
        on NumPy arrays and compiles into the GPU kernels), and its identity.
        Before a Monoid's first scan in an accumulator dtype, its identity is
        checked as ``init`` is, and ``combine(e, v) == v == combine(v, e)`` on
        a few values of the dtype, once, on the host.
    axis : int or None, default None
        None scans the flattened array (C order) and returns a 1-D result, as
        ``numpy.cumsum`` does.  An integer (negative counts from the end) scans
        every 1-D lane along that axis; the result has x's shape.  Out of range
        (or any integer for a 0-d x): NumPy's ``AxisError``.
    inclusive : bool, default True
        Inclusive: ``y[i] = init ⊕ x[0] ⊕ ... ⊕ x[i]`` (``init`` left out when
        None).  Exclusive (False): ``y[0] = init`` (the identity when None) and
        ``y[i] = init ⊕ x[0] ⊕ ... ⊕ x[i-1]``.
    reverse : bool, default False
        Scan from the end of each lane: inclusive
        ``y[i] = x[i] ⊕ x[i+1] ⊕ ... ⊕ x[n-1] ⊕ init``, exclusive
        ``y[n-1] = init``, ``y[i] = x[i+1] ⊕ ... ⊕ x[n-1] ⊕ init``.  The seed
        sits at the far (right) end and operands stay in index order.
    init : scalar or array, optional
        The seed of every lane: a scalar, or an array that broadcasts to the
        lane shape (x's shape without ``axis``; ``()`` for ``axis=None``),
        followed by ``(tuple_size,)`` when ``tuple_size > 1`` (one seed per
        stream).  A tuple of those for a struct operator.  It is converted to
        the accumulator dtype (see ``dtype``), and a value that dtype cannot
        hold exactly is refused, elementwise for arrays: an integer
        accumulator takes integers in its range (integral floats such as
        ``2.0`` included; ``0.5``, NaN, ``2**40`` for int32 or ``-1`` for
        uint8 raise ValueError), a bool accumulator True or False only.  A
        float accumulator takes any real number, rounded to its dtype (a value
        beyond its range becomes ±inf); a complex one any number.  A string,
        or a complex value for a real accumulator, raises TypeError.
    order : int, default 1
        ``order=q`` (1 to 64) applies the scan described by the other arguments q times.
        With ``op="add"`` and ``inclusive=True`` this decodes a q-th order
        difference sequence (see :func:`prefixscan.delta_decode`); the GPU runs
        every order in one pass over the data (Maleki, Yang & Burtscher,
        "Higher-order and tuple-based massively-parallel prefix sums", PLDI 2016).
    tuple_size : int, default 1
        ``tuple_size=s`` (dividing the lane length) interleaves s independent
        streams in each lane: element ``m + j*s`` belongs to stream m, and each
        stream is scanned on its own, as if the lane were reshaped to
        ``(n / s, s)`` and scanned along its first axis (RGB pixels: 3).
        Combines with ``order``.
    dtype : dtype, optional
        The accumulation and output dtype (a NumPy or torch dtype, or its name).
        By default the input dtype is kept, with no widening unlike
        ``numpy.cumsum``; float16 and bfloat16 accumulate in float32 and are
        rounded once on output (``scan`` only: :func:`cumsum` and
        :func:`cumprod` follow NumPy's rule and accumulate float16 in float16).
        An explicit ``dtype`` is the accumulator too.  Integer overflow wraps
        as in C.  ``"add"`` and ``"mul"`` on bool input need an integer
        ``dtype``.
    out : array or tuple of arrays, optional
        Where to write the result: an array of the result's shape and device
        (a tuple for a struct operator), of the result's dtype or one it casts
        to under NumPy's ``same_kind`` rule (int64 into int32, float64 into
        float32: computed as without ``out`` by the ``dtype`` rule, then cast;
        float into int is refused).  It may be ``x`` itself, or overlap
        it (x is then read from a copy).  Read-only arrays, arrays whose
        elements share memory (``expand``/broadcast views) and tensors that
        require grad are refused.  Nothing is written to ``out`` when an error
        is raised.
    backend : {None, "cpu", "triton"}, default None
        None runs device arrays on the GPU backend (Triton kernels; needs the
        ``gpu`` extra, ``pip install -e '.[gpu]'`` in a checkout) and host
        arrays on the CPU backend: compiled single-pass kernels (Numba) from
        8192 elements on (131072 for the integer scans NumPy runs as one ufunc
        accumulate), NumPy below.  Float results round differently on the two
        paths (the compiled sums add four elements at a time): a float32 sum
        can change in its last digits when x grows past the threshold.
        Naming a backend that cannot take x's device is an error, never a
        silent copy.
    algorithm : str, optional
        CPU backend only: the scan network.  None/"auto" (the compiled single
        pass from 8192 elements on; below, a NumPy ufunc's serial accumulate
        for built-in operators, else Brent-Kung), "serial" (the chained scan,
        compiled from 8192 elements on too), or one of the networks, which
        always run on NumPy: "kogge_stone" (Kogge & Stone 1973), "sklansky"
        (Sklansky 1960), "brent_kung" (Brent & Kung 1982) or
        "reduce_then_scan"; see :mod:`prefixscan.networks`.  All give the same
        results for exact operators.
    deterministic : bool, default False
        GPU backend: True runs only strategies that combine tiles in an order
        fixed by the sizes and the grid, so floating-point results are bitwise
        identical from run to run; the default decoupled look-back (Merrill &
        Garland 2016) may group earlier tiles in a timing-dependent way.
        Integers are exact either way; CPU results are always reproducible.
    strategy : str, optional
        GPU backend only: how carries travel between tiles.  None/"auto" (the
        tuned table's choice, else decoupled look-back, or chained with
        ``deterministic=True``), "decoupled_lookback" (Merrill & Garland 2016),
        "chained" (each tile waits for its predecessor's prefix),
        "reduce_then_scan" (Merrill & Grimshaw 2009's two-level scan over a
        fixed grid), "scan_then_propagate" (recursive, as CUDPP) or
        "persistent" (resident blocks, carries through circular buffers, as
        SAM).  Every strategy gives the same results; only
        "decoupled_lookback" is refused with ``deterministic=True``.

    Returns
    -------
    array or tuple of arrays
        The scan, of the caller's array type (NumPy in, NumPy out; CuPy in,
        CuPy out; ...) and the ``dtype`` rule above: x's shape for an integer
        ``axis``, 1-D for ``axis=None``.  ``out`` itself when given.  A tuple,
        one array per field, for a struct operator.

    Raises
    ------
    TypeError
        An argument of the wrong type (a string or masked array ``x``, a JAX
        tracer from inside ``jax.jit``), a dtype the operator does not take,
        ``out`` of a dtype the result does not cast to, an ``init`` of the wrong kind (or
        not a tuple for a struct operator), a ``dtype`` that is not numeric, or a
        Monoid whose ``combine`` uses Python's ``max``/``if`` or a function of
        :mod:`math` (``math.exp``: use ``prefixscan.exp``) on arrays, or whose
        identity is not a number.  The message names the argument.
    ValueError
        An out-of-range ``axis`` (``AxisError``, a ValueError), ``order``
        outside 1..64 or ``tuple_size`` below 1, a
        ``tuple_size`` that does not divide the lane length, an ``init`` or
        ``out`` of the wrong shape, an ``init`` value the accumulator cannot
        hold, a tuple ``x`` whose length the Monoid's identity does not
        match, a Monoid whose identity the accumulator dtype cannot hold or
        is not an identity (``combine(e, v) != v`` for some value ``v``), or
        whose ``combine`` returns another number of fields than x has, an
        unknown name or ufunc, or ``algorithm`` / ``strategy`` given to the
        backend that does not take it.  Every argument is checked before any
        work starts: nothing is written to ``out`` when one of these is
        raised.
    prefixscan.BackendUnavailableError
        No backend can scan x here (e.g. a CUDA array without the GPU extra);
        the message says what to install.

    See Also
    --------
    make_scan : the same scan as a reusable object.
    cumsum, cumprod, cummax, cummin : NumPy drop-ins.
    docs/semantics.md : these definitions as a table.

    Examples
    --------
    >>> import numpy as np, prefixscan
    >>> prefixscan.scan(np.array([1, 2, 3, 4]))
    array([ 1,  3,  6, 10])
    >>> prefixscan.scan(np.array([1, 2, 3, 4]), inclusive=False, init=10)
    array([10, 11, 13, 16])
    >>> prefixscan.scan(np.array([1, 2, 3, 4, 5, 6]), tuple_size=2)
    array([ 1,  2,  4,  6,  9, 12])
    """
    if type(x) is not np.ndarray and wants_torch_ops(x, init):
        # Autograd records it or torch.compile traces it: the custom operator, without the
        # shared one-shot Scan (a trace would guard on that cache and recompile as it grows).
        from . import tensors as scans  # imports torch: x is a tensor

        return scans.scan(x, op, axis=axis, inclusive=inclusive, reverse=reverse, init=init, order=order,
                          tuple_size=tuple_size, dtype=dtype, out=out, backend=backend, algorithm=algorithm,
                          deterministic=deterministic, strategy=strategy)
    return run_shared(x, init, out, shared_scan(op, axis=axis, inclusive=inclusive, reverse=reverse, order=order,
                                                tuple_size=tuple_size, dtype=dtype, backend=backend,
                                                algorithm=algorithm, deterministic=deterministic,
                                                strategy=strategy))


def run_shared(x, init, out, shared: Scan):
    """:func:`scan`'s body once its caller has made the torch-ops test (autograd or
    torch.compile take the custom operator) and found the ``shared`` :class:`Scan` of its
    arguments (:func:`shared_scan`): ``x`` scanned, lazily for a dask collection."""
    if type(x) is not np.ndarray and is_dask_collection(x):
        return shared(x, init=init, out=out)
    return shared._run(x, init, out)  # the torch-ops test was the caller's
