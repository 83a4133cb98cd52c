"""The fused backward's shifted reads (prefixscan/primitives/recurrence/triton_shift.py):
``RecurrencePlan.shift`` "edge" (the aligned tile moved in registers, one load a vector
for the element past its edge) computes the same bits as "load" (the tile one step off
loaded as it stands).

Interpreter: tiles of 2 to 16 steps by 1 to 4 lanes, so that lengths of 1, primes and
exact multiples cross vector, tile and chunk boundaries; vectors of 2 (tiles of 2 steps), 4
and 8 elements (float32, 16-bit floats; float64 takes the load form); both orientations, the walk and the look-back, both
directions, with and without init, log decays, restart flags, complex values, no dL/da,
a decay broadcast over time, an adjoint arriving from after the end.  The data are random, ``h`` too (the backward takes any).
GPU: the benchmark's shapes and their neighbours under the default tilings.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from prefixscan.backends.triton.runtime import launch as runtime  # noqa: E402
from prefixscan.primitives.recurrence import triton_kernel as R  # noqa: E402
from prefixscan.primitives.recurrence.triton_plans import _edge_vectors  # noqa: E402

CUDA = torch.cuda.is_available()
DEVICE = "cuda" if CUDA else "cpu"
F16 = torch.float16


@dataclasses.dataclass(frozen=True)
class Case:
    shape: tuple
    axis: int
    block_time: int
    block_lanes: int
    lookback: bool = False
    dtype: torch.dtype = torch.float32
    reverse: bool = False
    init: bool = True
    log: bool = False
    restart: bool = False
    need_a: bool = True
    broadcast: bool = False  # a decay per lane, the same at every step (stride 0 along time)
    final: bool = False  # an adjoint arriving from after the lane's end (a later piece's)

    def __str__(self):
        flags = [name for name in ("lookback", "reverse", "log", "restart", "broadcast", "final")
                 if getattr(self, name)]
        flags += [] if self.init else ["no-init"]
        flags += [] if self.need_a else ["no-da"]
        return (f"{'x'.join(map(str, self.shape))}-axis{self.axis}-{self.block_lanes}x{self.block_time}-"
                f"{str(self.dtype).split('.')[-1]}{'-' if flags else ''}{'-'.join(flags)}")


CASES = [
    # time contiguous: a tile row is a lane, vectors of 16 // itemsize elements along it
    Case((2, 3, 17), 2, 8, 2),
    Case((2, 3, 17), 2, 8, 2, lookback=True, reverse=True),
    Case((1, 1, 1), 2, 8, 1),
    Case((1, 1, 1), 2, 8, 1, lookback=True, dtype=F16, reverse=True, init=False),
    Case((3, 1, 9), 2, 4, 1, dtype=torch.float64, reverse=True),
    Case((1, 5, 31), 2, 8, 4, dtype=F16),  # one vector a tile row, a masked lane
    Case((1, 2, 16), 2, 16, 2, lookback=True, dtype=F16, init=False),  # one whole tile
    Case((2, 2, 7), 2, 2, 2, reverse=True),  # tiles shorter than a vector
    Case((1, 2, 40), 2, 16, 2, dtype=torch.bfloat16, reverse=True),
    Case((2, 3, 11, 1), 2, 8, 2, lookback=True),  # a trailing dimension of 1: time contiguous
    Case((1, 2, 23), 2, 8, 2, log=True),
    Case((1, 2, 23), 2, 8, 1, lookback=True, dtype=torch.float64, reverse=True, log=True),
    Case((2, 2, 19), 2, 8, 2, restart=True),
    Case((1, 2, 19), 2, 8, 2, lookback=True, reverse=True, log=True, restart=True),
    Case((2, 2, 13), 2, 8, 2, dtype=torch.complex64),
    Case((2, 2, 13), 2, 8, 2, lookback=True, dtype=torch.complex128, reverse=True, restart=True),
    Case((2, 2, 13), 2, 8, 2, reverse=True, need_a=False),
    Case((2, 3, 21), 2, 8, 2, broadcast=True),
    Case((2, 3, 21), 2, 8, 2, lookback=True, reverse=True, final=True),
    # lanes contiguous: a tile row is a step
    Case((2, 19, 5), 1, 8, 4),
    Case((2, 19, 5), 1, 8, 4, lookback=True, reverse=True),
    Case((1, 1, 3), 1, 8, 4, dtype=F16, init=False),
    Case((3, 9, 2), 1, 4, 2, lookback=True, dtype=torch.complex128),
    Case((1, 17, 4), 1, 8, 4, reverse=True, log=True, restart=True),
    Case((2, 19, 5), 1, 8, 4, final=True),
]


def _values(rng, shape, dtype, low=None, high=None):
    if low is None:
        x = rng.normal(size=shape)
        if dtype.is_complex:
            x = x + 1j * rng.normal(size=shape)
    else:
        x = rng.uniform(low, high, size=shape)
        if dtype.is_complex:
            x = x * np.exp(1j * rng.uniform(-1, 1, size=shape))
    return torch.tensor(x, device=DEVICE).to(dtype)


def _inputs(rng, case: Case):
    shape, axis = case.shape, case.axis
    if case.log:
        a = _values(rng, shape, case.dtype, -2.0, 0.1)
    elif case.broadcast:
        decay = _values(rng, shape[:axis] + (1,) + shape[axis + 1:], case.dtype, 0.3, 0.95)
        a = decay.expand(shape)
    else:
        a = _values(rng, shape, case.dtype, 0.3, 0.95)
    h, grad = _values(rng, shape, case.dtype), _values(rng, shape, case.dtype)
    init = _values(rng, shape[:axis] + shape[axis + 1:], case.dtype) if case.init else None
    final = _values(rng, shape[:axis] + shape[axis + 1:], case.dtype) if case.final else None
    flags = None
    if case.restart:
        n = shape[axis]
        flags = torch.zeros(n, dtype=torch.uint8, device=DEVICE)
        flags[[k for k in (0, 1, 7, 8, n - 1) if k < n]] = 1
    return a, h, grad, init, flags, final


def _backward(case: Case, shift: str, a, h, grad, init, flags, final):
    plan = R.RecurrencePlan(lookback=case.lookback, block_time=case.block_time, block_lanes=case.block_lanes,
                            num_warps=1, window=2, shift=shift)
    return R.linear_recurrence_backward(a, h, grad, init, case.axis, case.reverse, need_a=case.need_a, plan=plan,
                                        log_space=case.log, restart=flags, final=final)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_register_shifts_compute_the_load_forms_bits(rng, case):
    inputs = _inputs(rng, case)
    want = _backward(case, "load", *inputs)
    got = _backward(case, "edge", *inputs)
    for name, g, w in zip(("dL/da", "dL/db"), got, want):
        assert (g is None) == (w is None), name
        assert g is None or torch.equal(g, w), (name, (g - w).abs().max().item())


LENGTHS = (1, 3, 8, 13, 16, 17, 33)
TILES = ((2, 1), (4, 2), (8, 4), (16, 2))  # (block_time, block_lanes)
SWEEP = [Case((2, 3, n) if axis == 2 else (2, n, 3), axis, bt, bl, lookback=k % 3 == 1,
              dtype=(torch.float32, F16, torch.float64)[k % 3], reverse=k % 2 == 1, init=k % 4 != 3)
         for k, (n, (bt, bl), axis) in enumerate((n, tile, axis) for axis in (2, 1) for n in LENGTHS
                                                  for tile in TILES if n <= 8 * tile[0])]


def test_register_shifts_over_lengths_and_tiles(rng):
    """Lengths of 1, primes, powers of 2 and their neighbours against each tile of 2 to
    16 steps, both orientations (the dtype, direction, tiling and init rotating)."""
    for case in SWEEP:
        inputs = _inputs(rng, case)
        want = _backward(case, "load", *inputs)
        got = _backward(case, "edge", *inputs)
        assert all(torch.equal(g, w) for g, w in zip(got, want)), str(case)


def test_edge_vectors_follow_what_the_compiled_tile_holds():
    """The "edge" form's vectors: a 16-byte vector of the dtype where a thread's part of
    a time-contiguous tile holds one and the loads are known aligned; else 1 (the load
    form).  The interpreter takes the dtype's vector whatever the alignment."""
    plan = R.RecurrencePlan(lookback=False, block_time=1024, block_lanes=1, shift="edge")

    def vectors(shape, dtype, *, plan=plan, a=None, axis=2, interpreter=False):
        h = torch.empty(shape, dtype=dtype)
        a = h if a is None else a
        strides = R._geometry(tuple(h.shape), axis, (a, h))[4][0][:3]
        return _edge_vectors(plan, shape[axis], 1 if axis == len(shape) - 1 else shape[-1], strides, a, h,
                             interpreter)

    assert vectors((8, 16, 4096), torch.float32) == (4, 4)
    assert vectors((8, 16, 4096), torch.bfloat16) == (8, 8)
    assert vectors((8, 16, 4096), torch.float64) == (1, 1)  # 8-byte values: the load form
    assert vectors((8, 16, 4096), torch.complex64) == (1, 1)  # fields loaded with a stride of 2
    assert vectors((8, 16, 4004), torch.float32) == (1, 1)  # T not a multiple of 16: no vectors
    assert vectors((8, 16, 4004), torch.float32, interpreter=True) == (4, 4)
    assert vectors((8, 16, 4004), torch.float16, interpreter=True) == (8, 8)
    assert vectors((8, 4096, 16), torch.float32, axis=1) == (1, 1)  # lanes contiguous
    assert vectors((8, 16, 4096), torch.float32, plan=dataclasses.replace(plan, shift="load")) == (1, 1)
    small = dataclasses.replace(plan, block_time=256)  # 2 elements a thread on 4 warps
    assert vectors((8, 16, 4096), torch.bfloat16, plan=small) == (2, 2)
    over_time = torch.empty(8, 16, 1).expand(8, 16, 4096)  # a decay per lane: stride 0 along time
    assert vectors((8, 16, 4096), torch.float32, a=over_time) == (1, 4)
    shifted = torch.empty(8, 16, 4097)[..., 1:]  # 4 bytes off the alignment
    assert vectors((8, 16, 4096), torch.float32, a=shifted) == (1, 4)


def test_plan_refuses_an_unknown_shift_by_name():
    with pytest.raises(ValueError, match="shift"):
        R.RecurrencePlan(lookback=False, block_time=8, block_lanes=1, shift="shuffle")


def test_default_plans_move_the_shifted_values_where_time_is_contiguous():
    """The backward's default where time is contiguous (the walk and the look-back, and
    the interpreter's tiles) is the "edge" form; with lanes contiguous, and in the
    forward, which reads nothing one step off, "load"."""
    for args in ((8 * 1024, 4096, 1), (64, 1 << 20, 1), (1, 1 << 26, 1), (100, 2000, 1)):
        assert R.plan_for(*args, 132, False, backward=True).shift == "edge", args
        assert R.plan_for(*args, 132, True, backward=True).shift == "edge", args
        assert R.plan_for(*args, 132, False).shift == "load", args
    for args in ((8, 1024, 4096), (8, 4096, 1024), (1, 1 << 20, 64)):
        assert R.plan_for(*args, 132, False, backward=True).shift == "load", args
        assert R.plan_for(*args, 132, True, backward=True).shift == "load", args


GPU_SHAPES = [((4, 64, 4096), 2), ((2, 96, 1000), 2), ((64, 64, 256), 2), ((1, 4, 1 << 16), 2),
              ((2, 1000, 96), 1), ((8, 512, 1024), 1)]


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("layout", GPU_SHAPES, ids=lambda v: f"{'x'.join(map(str, v[0]))}-axis{v[1]}")
def test_gpu_register_shifts_compute_the_load_forms_bits(layout, dtype):
    """Compiled, under the default tilings (the walk and the look-back, tiles of 1 and 4
    lanes, T a multiple of 16 or not): "edge" gives the load form's bits, also where
    ``a`` is 4 bytes off the alignment (its vectors 1) and where reversed."""
    shape, axis = layout
    rng = np.random.default_rng(sum(shape))
    lanes = shape[:axis] + shape[axis + 1:]
    T, Q = shape[axis], int(np.prod(shape[axis + 1:]))
    base = dataclasses.replace(R.plan_for(int(np.prod(shape[:axis])), T, Q,
                                          torch.cuda.get_device_properties(0).multi_processor_count, False,
                                          backward=True), shift="load")
    a = torch.tensor(rng.uniform(0.3, 0.95, size=shape), device="cuda").to(dtype)
    h, grad = (torch.tensor(rng.normal(size=shape), device="cuda").to(dtype) for _ in range(2))
    init = torch.tensor(rng.normal(size=lanes), device="cuda").to(dtype)
    wide = torch.empty(shape[:-1] + (shape[-1] + 1,), dtype=dtype, device="cuda")
    off = wide[..., 1:]
    off.copy_(a)
    for reverse in (False, True):
        for a_in in (a, off):
            want = R.linear_recurrence_backward(a_in, h, grad, init, axis, reverse, plan=base)
            for shift in ("edge",):
                plan = dataclasses.replace(base, shift=shift)
                R._replays.clear()  # a planned replay launches without a Launch to record
                with runtime.recording() as seen:
                    got = R.linear_recurrence_backward(a_in, h, grad, init, axis, reverse, plan=plan)
                vectors = seen[0].constexprs["TILE"][7:9]
                if shift == "edge" and axis == 2 and T % 16 == 0:  # h's vectors always, a's where aligned
                    assert vectors[1] > 1 and (vectors[0] > 1) == (a_in is a), vectors
                for g, w in zip(got, want):
                    assert torch.equal(g, w), (shift, reverse, a_in is off, (g.float() - w.float()).abs().max().item())
