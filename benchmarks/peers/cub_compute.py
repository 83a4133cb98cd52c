"""CUB through cuda.compute (the ``cuda-cccl`` wheel), planned: the peer of compaction,
partition and sorting that a Python GPU user would pick.

Each function returns ``run()`` for a planned object (``make_*``, its temporary storage
allocated once), as CUB's own benchmarks time it; the inputs are torch tensors seen by
CuPy without a copy.  The predicates are C++ compiled by NVRTC (cuda.compute compiles a
Python predicate only with numba-cuda-mlir, which the GPU image lacks).  Selection by a
predicate reads only x, where ``prefixscan.compact`` also reads a mask: the roof of the
comparison is ours, the peer's traffic is lower.
"""

from __future__ import annotations

_CTYPES = {"int32": "int", "int64": "long long", "float32": "float", "float64": "double", "uint32": "unsigned int",
           "uint64": "unsigned long long"}


def _modules():
    import cupy
    import cuda.compute as cc

    return cc, cupy


def _predicate(name: str, dtype: str, threshold):
    """A RawOp ``x > threshold`` on one element of ``dtype`` (None: always false)."""
    from cuda.compute._cpp_compile import compile_cpp_to_ltoir
    from cuda.compute.op import RawOp

    ctype = _CTYPES[dtype]
    test = "0" if threshold is None else f"*static_cast<{ctype}*>(a) > ({ctype})({threshold!r})"
    src = (f'extern "C" __device__ void {name}(void* a, void* r) '
           f'{{ *static_cast<unsigned char*>(r) = {test}; }}')
    return RawOp(ltoir=compile_cpp_to_ltoir(src), name=name)


def select(x, threshold):
    """CUB's DeviceSelect::If of ``x > threshold``: ``run()`` and the count tensor."""
    cc, cupy = _modules()
    dtype = str(x.dtype).replace("torch.", "")
    dx = cupy.from_dlpack(x)
    dy = cupy.empty_like(dx)
    dn = cupy.empty(1, dtype=cupy.int64)
    cond = _predicate(f"gt_{dtype}", dtype, threshold)
    sel = cc.make_select(d_in=dx, d_out=dy, d_num_selected_out=dn, cond=cond)
    nbytes = sel(temp_storage=None, d_in=dx, d_out=dy, d_num_selected_out=dn, cond=cond, num_items=dx.size)
    tmp = cupy.empty(max(nbytes, 1), dtype=cupy.uint8)

    def run():
        sel(temp_storage=tmp, d_in=dx, d_out=dy, d_num_selected_out=dn, cond=cond, num_items=dx.size)

    return run, dn


def partition(x, threshold):
    """CUB's DeviceThreeWayPartition of ``x > threshold`` (the rest in a second output):
    ``run()``."""
    cc, cupy = _modules()
    dtype = str(x.dtype).replace("torch.", "")
    dx = cupy.from_dlpack(x)
    first, second, rest = cupy.empty_like(dx), cupy.empty_like(dx), cupy.empty_like(dx)
    dn = cupy.empty(2, dtype=cupy.int64)
    keep = _predicate(f"keep_{dtype}", dtype, threshold)
    never = _predicate(f"never_{dtype}", dtype, None)
    part = cc.make_three_way_partition(d_in=dx, d_first_part_out=first, d_second_part_out=second,
                                       d_unselected_out=rest, d_num_selected_out=dn,
                                       select_first_part_op=keep, select_second_part_op=never)
    kwargs = dict(d_in=dx, d_first_part_out=first, d_second_part_out=second, d_unselected_out=rest,
                  d_num_selected_out=dn, select_first_part_op=keep, select_second_part_op=never,
                  num_items=dx.size)
    nbytes = part(temp_storage=None, **kwargs)
    tmp = cupy.empty(max(nbytes, 1), dtype=cupy.uint8)

    def run():
        part(temp_storage=tmp, **kwargs)

    return run


def radix_sort(keys, values=None):
    """CUB's DeviceRadixSort of ``keys`` (and ``values``), ascending: ``run()``."""
    cc, cupy = _modules()
    dk = cupy.from_dlpack(keys)
    ok = cupy.empty_like(dk)
    dv = ov = None
    if values is not None:
        dv = cupy.from_dlpack(values)
        ov = cupy.empty_like(dv)
    sorter = cc.make_radix_sort(d_in_keys=dk, d_out_keys=ok, d_in_values=dv, d_out_values=ov,
                                order=cc.SortOrder.ASCENDING)
    kwargs = dict(d_in_keys=dk, d_out_keys=ok, d_in_values=dv, d_out_values=ov, num_items=dk.size)
    nbytes = sorter(temp_storage=None, **kwargs)
    tmp = cupy.empty(max(nbytes, 1), dtype=cupy.uint8)

    def run():
        sorter(temp_storage=tmp, **kwargs)

    return run
