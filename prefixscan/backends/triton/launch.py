"""Launching the scan kernels: layout, status buffers, tile sizes.

Every scan is a ``(B, M, K)`` row-major view scanned along M (see
:mod:`.kernels`).  Status buffers live per device and stream and are reused
across calls: each launch bumps an epoch that its flags carry and advances the
tile counter by its grid size, so no memset is needed between calls.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

from ..._arrays import as_torch
from ...dispatch import interpreter_mode
from .combine import triton_combine
from .tuning import choose_config

_EPOCH_LIMIT = 1 << 29  # flags hold epoch * 4 + state in 32 bits


@dataclass
class _DeviceState:
    device: object
    counter: object = None  # int64[1]: tiles handed out so far
    tiles_issued: int = 0
    epoch: int = 0
    status: object = None  # int64 packed words
    flags: object = None  # int32 flags (split mode)
    values: dict = field(default_factory=dict)  # (dtype) -> (agg, incl)

    def begin(self, entries: int, torch, acc, packed: bool):
        """Reserve status for ``entries`` entries; returns (status, flags, agg, incl)."""
        if self.counter is None:
            self.counter = torch.zeros(1, dtype=torch.int64, device=self.device)
        self.epoch += 1
        if self.epoch >= _EPOCH_LIMIT:  # wrap: clear so old words cannot match
            self.epoch = 1
            for buf in (self.status, self.flags):
                if buf is not None:
                    buf.zero_()
        if packed:
            if self.status is None or self.status.numel() < entries:
                self.status = torch.zeros(_grow(entries), dtype=torch.int64, device=self.device)
            dummy = self.status
            return self.status, dummy, dummy, dummy
        if self.flags is None or self.flags.numel() < entries:
            self.flags = torch.zeros(_grow(entries), dtype=torch.int32, device=self.device)
        vals = self.values.get(acc)
        if vals is None or vals[0].numel() < entries:
            n = _grow(entries)
            vals = (torch.empty(n, dtype=acc, device=self.device), torch.empty(n, dtype=acc, device=self.device))
            self.values[acc] = vals
        return self.flags, self.flags, vals[0], vals[1]


def _grow(n: int) -> int:
    return 1 << max(10, math.ceil(math.log2(max(n, 1))))


_states: dict = {}


def _state_for(tensor, torch) -> _DeviceState:
    if tensor.is_cuda:
        key = (tensor.device.index, torch.cuda.current_stream(tensor.device).cuda_stream)
    else:
        key = ("cpu", 0)
    state = _states.get(key)
    if state is None:
        state = _states[key] = _DeviceState(tensor.device)
    return state


_identities: dict = {}


def _identity_tensor(value, dtype, device, torch):
    """The identity as a one-element device tensor, made once (no copy per call)."""
    key = (value, dtype, device)
    t = _identities.get(key)
    if t is None:
        t = _identities[key] = torch.tensor([value], dtype=dtype, device=device)
    return t


def torch_dtype(name: str):
    import torch

    return getattr(torch, name)


def _layout(request) -> tuple[int, int, int]:
    """(B, M, K) for the request: lanes, scanned length, interleaved streams."""
    s = request.config.tuple_size
    if request.axis is None:
        return 1, request.lane_len // s, s
    shape = request.shape
    pre = math.prod(shape[: request.axis])
    post = math.prod(shape[request.axis + 1:])
    return pre, request.lane_len // s, post * s


def run_scan(request) -> list:
    import torch

    if len(request.fields) != 1:
        raise NotImplementedError("x: struct monoids (tuples of arrays) run on backend='cpu' for now")
    config = request.config
    monoid = config.monoid
    x = as_torch(request.fields[0])
    acc = torch_dtype(request.acc_dtypes[0])
    out_dtype = torch_dtype(request.out_dtypes[0])
    B, M, K = _layout(request)
    if request.out is not None:
        y_user = as_torch(request.out[0])
        y = y_user if y_user.is_contiguous() else torch.empty_like(y_user, memory_format=torch.contiguous_format)
    else:
        y_user = None
        y = torch.empty(request.out_shape, dtype=out_dtype, device=x.device)
    if x.numel() == 0:
        return [y_user if y_user is not None else y]
    x = x.contiguous()
    if interpreter_mode() and x.data_ptr() == y.data_ptr():
        # The interpreter copies every tensor argument to a host buffer and back
        # after the launch, so an aliased input would overwrite the output.
        x = x.clone()
    y_kernel = y
    if acc == torch.bool:
        # Bool scans (max/min/and/or/xor) are the same scans on 0/1 bytes.
        x, y_kernel, acc = x.view(torch.uint8), y.view(torch.uint8), torch.uint8
    ident = _identity_tensor(request.identity[0].item(), acc, x.device, torch)
    init = None
    if request.init is not None:
        value = request.init[0]
        value = value if torch.is_tensor(value) else torch.as_tensor(np.asarray(value))
        init = value.to(device=x.device, dtype=acc).broadcast_to(request.init_shape).contiguous()
    swapped = config.reverse and not monoid.commutative
    combine = triton_combine(monoid, swapped)
    # Intermediate orders stay in the accumulator dtype.
    mid = y_kernel if (config.order == 1 or y_kernel.dtype == acc) else torch.empty(y.shape, dtype=acc,
                                                                                   device=y.device)
    src = x
    for q in range(config.order):
        dst = y_kernel if q == config.order - 1 else mid
        _launch(src, dst, ident, init, combine, monoid.commutative, acc, B, M, K, config, torch)
        src = dst
    if y_user is not None and y is not y_user:
        y_user.copy_(y)
        return [y_user]
    return [y]


def _launch(x, y, ident, init, combine, commutative, acc, B, M, K, config, torch):
    from . import kernels

    tl_acc = _tl_dtype(acc)
    tune = choose_config(x.device, acc.itemsize, acc.is_floating_point, M, K, interpreter_mode())
    packed = acc.itemsize <= 4 if tune.packed is None else tune.packed
    init_arg = init if init is not None else ident
    common = dict(COMBINE=combine, COMMUTATIVE=commutative, ACC=tl_acc, INCLUSIVE=config.inclusive,
                  REVERSE=config.reverse, HAS_INIT=init is not None, PACKED=packed)
    if K == 1:
        block = tune.block
        single = M <= block
        if single:
            block = max(16, 1 << math.ceil(math.log2(M)))
        tiles = 1 if single else -(-M // block)
        grid_size = B * tiles
        status, flags, agg, incl = (ident,) * 4
        base = epoch = 0
        state = None
        if not single:
            state = _state_for(x, torch)
            status, flags, agg, incl = state.begin(grid_size, torch, acc, packed)
            base, epoch = state.tiles_issued, state.epoch
            counter = state.counter
        else:
            counter = ident
        _run(kernels.scan_1d_kernel, grid_size, tune.num_warps,
             (x, y, ident, init_arg, status, flags, agg, incl, counter, M, tiles, base, epoch),
             dict(common, SINGLE_TILE=single, MULTI_LANE=B > 1, BLOCK=block, WINDOW=tune.window), (M,))
    else:
        kb = min(1 << math.ceil(math.log2(K)), tune.max_kb)
        col_blocks = -(-K // kb)
        rows = max(1, tune.block // kb)
        single = M <= rows
        if single:
            rows = max(1, 1 << math.ceil(math.log2(M)))
        tiles = 1 if single else -(-M // rows)
        grid_size = B * col_blocks * tiles
        status, flags, agg, incl = (ident,) * 4
        base = epoch = 0
        state = None
        if not single:
            state = _state_for(x, torch)
            status, flags, agg, incl = state.begin(grid_size * kb, torch, acc, packed)
            base, epoch = state.tiles_issued, state.epoch
            counter = state.counter
        else:
            counter = ident
        _run(kernels.scan_2d_kernel, grid_size, tune.num_warps,
             (x, y, ident, init_arg, status, flags, agg, incl, counter, M, K, col_blocks, tiles, base, epoch),
             dict(common, SINGLE_TILE=single, MULTI_LANE=B > 1, EXACT_K=K == kb, ROWS=rows, KB=kb,
                  WINDOW=tune.window), (M, K))
    if state is not None:
        state.tiles_issued += grid_size


_compiled: dict = {}


def _run(kernel, grid_size: int, num_warps: int, args: tuple, constexprs: dict, specialized_ints: tuple):
    """Launch ``kernel``; after the first launch of a variant, skip Triton's
    argument binding and go straight to the compiled kernel's launcher.

    The cache key holds everything Triton specializes on: tensor dtypes and
    16-byte alignment, the specialized integers' divisibility by 16 and
    equality with 1, the constexprs and the warps.
    """
    if interpreter_mode():
        kernel[(grid_size,)](*args, num_warps=num_warps, **constexprs)
        return
    import torch
    from triton import knobs

    key = (kernel, num_warps, tuple(constexprs.items()),
           tuple((a.dtype, a.data_ptr() % 16 == 0) for a in args if isinstance(a, torch.Tensor)),
           tuple((v % 16 == 0, v == 1) for v in specialized_ints))
    compiled = _compiled.get(key)
    if compiled is None:
        _compiled[key] = kernel[(grid_size,)](*args, num_warps=num_warps, **constexprs)
        return
    device = args[0].device
    stream = torch.cuda.current_stream(device).cuda_stream
    full = args + tuple(constexprs[name] for name in kernel.arg_names[len(args):])
    hook = knobs.runtime.launch_enter_hook
    metadata = compiled.launch_metadata((grid_size, 1, 1), stream, *full) if hook is not None else None
    compiled.run(grid_size, 1, 1, stream, compiled.function, compiled.packed_metadata, metadata,
                 hook, knobs.runtime.launch_exit_hook, *full)


@functools.lru_cache(maxsize=None)
def _tl_dtype(torch_dtype_obj):
    from triton.language.core import dtype as tl_dtype

    name = str(torch_dtype_obj).replace("torch.", "")
    return tl_dtype({"float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64",
                     "bool": "int1"}.get(name, name))
