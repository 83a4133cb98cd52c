"""The one-pass linear recurrence kernel (prefixscan/primitives/recurrence/triton_kernel.py).

Forward against the plain-loop reference of prefixscan.testing, the fused
backward against torch autograd through a float64 plain loop; every tiling
(sequential walk, look-back over time tiles) in both orientations ((B, T, C):
lanes contiguous; (B, C, T): time contiguous), forced by a plan so that small
interpreter tests cross chunk and tile boundaries.  GPU tests: the benchmark's
shapes, more than 2^31 elements, CUDA graph capture, the deterministic mode.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

import prefixscan as ps  # noqa: E402
from prefixscan.backends.triton.runtime import launch as runtime  # noqa: E402
from prefixscan.primitives.recurrence import triton_kernel as R  # noqa: E402
from prefixscan.primitives.recurrence.affine import AFFINE_BACKWARD  # noqa: E402
from prefixscan.testing import reference_linear_recurrence  # noqa: E402

CUDA = torch.cuda.is_available()
DEVICE = "cuda" if CUDA else "cpu"

PLANS = {
    "walk": lambda q: R.RecurrencePlan(lookback=False, block_time=8, block_lanes=4, num_warps=1),
    "lookback": lambda q: R.RecurrencePlan(lookback=True, block_time=8, block_lanes=4 if q > 1 else 1,
                                           num_warps=1, window=2),
}
# (shape, axis): (B, T, C) and (B, C, T); lengths cross 8-step tiles, a prime and 2^k + 1.
LAYOUTS = [((2, 19, 5), 1), ((3, 2, 17), 2)]


def _data(rng, shape, dtype):
    a = rng.uniform(0.3, 0.95, size=shape)
    b = rng.normal(size=shape)
    if dtype.is_complex:
        a = a * np.exp(1j * rng.uniform(-1, 1, size=shape))
        b = b + 1j * rng.normal(size=shape)
    return torch.tensor(a, dtype=dtype, device=DEVICE), torch.tensor(b, dtype=dtype, device=DEVICE)


def _loop(a, b, init, axis, reverse):
    """A differentiable float64 plain loop (the gradient reference)."""
    a, b = torch.broadcast_tensors(a, b)
    a, b = a.movedim(axis, -1), b.movedim(axis, -1)
    h = torch.zeros(a.shape[:-1], dtype=a.dtype, device=a.device) if init is None else init.expand(a.shape[:-1])
    out = [None] * a.shape[-1]
    for t in (range(a.shape[-1] - 1, -1, -1) if reverse else range(a.shape[-1])):
        h = a[..., t] * h + b[..., t]
        out[t] = h
    return torch.stack(out, -1).movedim(-1, axis)


def _wide(t):
    return t.to(torch.complex128 if t.is_complex() else torch.float64)


# Triton 3.6's interpreter gives a masked bfloat16 load with other=1 as 0.0, which the
# walk's padded steps then multiply into the product (compiled Triton gives 1.0): float16 there.
HALF = torch.bfloat16 if CUDA else torch.float16


@pytest.mark.parametrize("dtype", [torch.float32, torch.complex64, HALF, torch.float64, torch.complex128],
                         ids=["f32", "c64", "half", "f64", "c128"])
@pytest.mark.parametrize("reverse", [False, True], ids=["fwd", "rev"])
@pytest.mark.parametrize("layout", LAYOUTS, ids=["BTC", "BCT"])
@pytest.mark.parametrize("plan", sorted(PLANS))
def test_total_stores_only_the_lane_maps(rng, plan, layout, reverse, dtype):
    """TOTAL: each lane's (product of a, last state from zero) in the accumulator dtype
    (16-bit floats in float32), through a broadcast decay read in place."""
    shape, axis = layout
    a, b = _data(rng, shape, dtype)
    a = a.narrow(0, 0, 1).expand(shape)  # a decay shared by the batch: stride 0, not copied
    chosen = PLANS[plan](shape[-1] if axis == 1 else 1)
    product, state = R.linear_recurrence_total(a, b, axis, reverse, plan=chosen)
    wide = np.complex128 if dtype.is_complex else np.float64
    an, bn = (t.cpu().to(torch.complex128 if dtype.is_complex else torch.float64).numpy() for t in (a, b))
    h = reference_linear_recurrence(an, bn, axis=axis, reverse=reverse, dtype=wide)
    accumulator = torch.float32 if dtype == HALF else dtype
    assert product.dtype == state.dtype == accumulator and product.shape == shape[:axis] + shape[axis + 1:]
    tol = 1e-12 if dtype in (torch.float64, torch.complex128) else 2e-5  # 8-byte fields: the flag protocol
    np.testing.assert_allclose(product.cpu().numpy(), np.prod(an, axis=axis), rtol=tol)
    np.testing.assert_allclose(state.cpu().numpy(), np.take(h, 0 if reverse else shape[axis] - 1, axis=axis),
                               rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.complex64], ids=["f32", "c64"])
@pytest.mark.parametrize("reverse", [False, True], ids=["fwd", "rev"])
@pytest.mark.parametrize("layout", LAYOUTS, ids=["BTC", "BCT"])
@pytest.mark.parametrize("plan", sorted(PLANS))
def test_forward_and_fused_backward(rng, plan, layout, reverse, dtype):
    shape, axis = layout
    a, b = _data(rng, shape, dtype)
    lanes = shape[:axis] + shape[axis + 1:]
    init = _data(rng, lanes, dtype)[1]
    chosen = PLANS[plan](shape[-1] if axis == 1 else 1)
    h = R.linear_recurrence(a, b, init, axis, reverse, plan=chosen)
    expected = reference_linear_recurrence(a.cpu().numpy(), b.cpu().numpy(), init=init.cpu().numpy(), axis=axis,
                                           reverse=reverse, dtype=np.complex128 if dtype.is_complex else np.float64)
    np.testing.assert_allclose(h.cpu().numpy(), expected, rtol=2e-5, atol=2e-5)
    grad = _data(rng, shape, dtype)[1]
    grad_a, grad_b = R.linear_recurrence_backward(a, h, grad, init, axis, reverse, plan=chosen)
    wa, wb, wi = (_wide(t).requires_grad_() for t in (a, b, init))
    ea, eb = torch.autograd.grad(_loop(wa, wb, wi.detach(), axis, reverse), (wa, wb), _wide(grad))
    torch.testing.assert_close(_wide(grad_b), eb, rtol=2e-5, atol=2e-5)
    torch.testing.assert_close(_wide(grad_a), ea, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.complex64, torch.float64], ids=["f32", "c64", "f64"])
@pytest.mark.parametrize("reverse", [False, True], ids=["fwd", "rev"])
@pytest.mark.parametrize("layout", LAYOUTS, ids=["BTC", "BCT"])
@pytest.mark.parametrize("plan", sorted(PLANS))
def test_fused_backward_takes_an_adjoint_from_after_the_end(rng, plan, layout, reverse, dtype):
    """``final``: the adjoint arriving from after the lane's last step (its first, in
    reverse; a later rank's in prefixscan.distributed) joins ``dL/dh`` at that step:
    against autograd through a float64 loop fed the gradient with it added there, with
    ``init`` (dL/da at the first step).  Without ``dL/da`` too."""
    shape, axis = layout
    lanes = shape[:axis] + shape[axis + 1:]
    a, b = _data(rng, shape, dtype)
    init, final = _data(rng, lanes, dtype)[1], _data(rng, lanes, dtype)[1]
    grad = _data(rng, shape, dtype)[1]
    chosen = PLANS[plan](shape[-1] if axis == 1 else 1)
    h = R.linear_recurrence(a, b, init, axis, reverse, plan=chosen)
    grad_a, grad_b = R.linear_recurrence_backward(a, h, grad, init, axis, reverse, plan=chosen, final=final)
    joined = _wide(grad).clone()
    joined.select(axis, 0 if reverse else shape[axis] - 1).add_(_wide(final))
    wa, wb = (_wide(t).requires_grad_() for t in (a, b))
    ea, eb = torch.autograd.grad(_loop(wa, wb, _wide(init), axis, reverse), (wa, wb), joined)
    tol = 1e-12 if dtype == torch.float64 else 2e-5
    torch.testing.assert_close(_wide(grad_b), eb, rtol=tol, atol=tol)
    torch.testing.assert_close(_wide(grad_a), ea, rtol=tol, atol=tol)
    none_a, only_b = R.linear_recurrence_backward(a, h, grad, None, axis, reverse, plan=chosen, need_a=False,
                                                  final=final)
    assert none_a is None
    torch.testing.assert_close(_wide(only_b), eb, rtol=tol, atol=tol)


@pytest.mark.parametrize("split", [False, True], ids=["composed", "split"])
@pytest.mark.parametrize("layout", [((1, 17, 4), 1), ((1, 2, 17), 2)], ids=["BTC", "BCT"])
@pytest.mark.parametrize("plan", sorted(PLANS))
def test_log_space_forward_totals_and_fused_backward(rng, plan, layout, split):
    """``LOG``: log decays loaded and taken through ``exp`` in registers, sums of logs
    scanned and passed between chunks and tiles.  Forward with init, the fused backward
    (``dL/da`` with respect to the log decays) against autograd through a float64 loop
    fed ``exp(a)``, and the lane totals of decays whose product underflows (the sum of
    the log decays, not log 0).  Forward on (B, T, C), reverse on (B, C, T); 17 steps
    cross three 8-step tiles (the interpreter's look-back is slow: few lanes).  ``split``:
    the tile's scan carries exp(la) beside la (``RecurrencePlan.log_split``)."""
    shape, axis = layout
    reverse = axis == 2
    la = torch.tensor(rng.uniform(-2.0, 0.2, size=shape), dtype=torch.float64, device=DEVICE)
    b, grad = (torch.tensor(rng.normal(size=shape), dtype=torch.float64, device=DEVICE) for _ in range(2))
    init = torch.tensor(rng.normal(size=shape[:axis] + shape[axis + 1:]), dtype=torch.float64, device=DEVICE)
    chosen = dataclasses.replace(PLANS[plan](shape[-1] if axis == 1 else 1), log_split=split)
    h = R.linear_recurrence(la, b, init, axis, reverse, plan=chosen, log_space=True)
    wa, wb = la.clone().requires_grad_(), b.clone().requires_grad_()
    want = _loop(wa.exp(), wb, init, axis, reverse)
    torch.testing.assert_close(h, want, rtol=1e-12, atol=1e-12)
    grad_a, grad_b = R.linear_recurrence_backward(la, h, grad, init, axis, reverse, plan=chosen, log_space=True)
    ea, eb = torch.autograd.grad(want, (wa, wb), grad)
    torch.testing.assert_close(grad_b, eb, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(grad_a, ea, rtol=1e-12, atol=1e-12)
    steep = la - 100.0  # exp(-100) ** 2 underflows even in float64 over these lanes
    product, state = R.linear_recurrence_total(steep, b, axis, reverse, plan=chosen, log_space=True)
    torch.testing.assert_close(product, steep.sum(axis), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(state, b.select(axis, 0 if reverse else shape[axis] - 1), rtol=1e-12, atol=1e-12)


def test_log_space_16_bit_accumulates_in_float32(rng):
    """bfloat16 log decays (a masked load of the identity log decay, 0, is exact in the
    interpreter too): accumulated in float32, rounded once."""
    la = torch.tensor(rng.uniform(-0.5, 0.0, size=(2, 40, 3)), dtype=torch.bfloat16, device=DEVICE)
    b = torch.tensor(rng.normal(size=(2, 40, 3)), dtype=torch.bfloat16, device=DEVICE)
    h = R.linear_recurrence(la, b, None, 1, False, plan=PLANS["walk"](3), log_space=True)
    assert h.dtype == torch.bfloat16
    want = reference_linear_recurrence(la.double().exp().cpu().numpy(), b.double().cpu().numpy(), axis=1)
    np.testing.assert_allclose(h.double().cpu().numpy(), want, rtol=2 * torch.finfo(torch.bfloat16).eps, atol=2e-2)


@pytest.mark.parametrize("plan", sorted(PLANS))
def test_broadcast_decay_is_read_in_place(rng, plan):
    """A per-channel decay of shape (C, 1) against b of shape (B, C, T): stride 0 over
    batch and time, read where it is (the kernel gets the expanded view)."""
    decay = torch.tensor(rng.uniform(0.5, 0.9, size=(3, 1)), dtype=torch.float32, device=DEVICE)
    b = _data(rng, (2, 3, 21), torch.float32)[1]
    a = decay.expand(b.shape)
    assert a.stride() == (0, 1, 0)
    h = R.linear_recurrence(a, b, None, 2, False, plan=PLANS[plan](1))
    expected = reference_linear_recurrence(decay.cpu().numpy(), b.cpu().numpy(), axis=2)
    np.testing.assert_allclose(h.cpu().numpy(), expected, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "f16"])
def test_16_bit_accumulates_in_float32(rng, dtype):
    a, b = _data(rng, (2, 40, 3), torch.float32)
    a16, b16 = a.to(dtype), b.to(dtype)
    h = R.linear_recurrence(a16, b16, None, 1, False, plan=PLANS["walk"](3))
    assert h.dtype == dtype
    expected = reference_linear_recurrence(a16.float().cpu().numpy(), b16.float().cpu().numpy(), axis=1)
    # rounded once from float32 accumulation: within half an ulp of the 16-bit type, plus accumulation error
    np.testing.assert_allclose(h.float().cpu().numpy(), expected, rtol=2 * torch.finfo(dtype).eps, atol=1e-3)


def test_public_api_runs_the_kernel_with_offsets_and_final_state(rng):
    """linear_recurrence on the Triton backend launches this kernel (forward and
    backward), packed sequences and final states included."""
    a, b = _data(rng, (2, 13, 3), torch.float64)
    a.requires_grad_()
    b.requires_grad_()
    offsets = torch.tensor([0, 4, 13])
    init = _data(rng, (2, 2, 3), torch.float64)[1].requires_grad_()
    with runtime.recording() as seen:
        h, final = ps.linear_recurrence(a, b, init=init, axis=1, offsets=offsets, return_final=True,
                                        backend="triton")
        (h.sum() + (final ** 2).sum()).backward()
    modes = [launch.constexprs["MODE"] for launch in seen if launch.kernel is R.recurrence_kernel]
    assert [mode[2] for mode in modes] == [False, True]  # BACKWARD
    assert all(mode[5] for mode in modes)  # RESTART: the kernel restarts the sequences, no copy of a
    pieces = [_loop(a[:, s:e], b[:, s:e], init[:, k], 1, False) for k, (s, e) in enumerate([(0, 4), (4, 13)])]
    torch.testing.assert_close(h, torch.cat(pieces, 1))
    wa, wb, wi = (t.detach().clone().requires_grad_() for t in (a, b, init))
    ref = [_loop(wa[:, s:e], wb[:, s:e], wi[:, k], 1, False) for k, (s, e) in enumerate([(0, 4), (4, 13)])]
    ref_h = torch.cat(ref, 1)
    (ref_h.sum() + (torch.stack([ref[0][:, -1], ref[1][:, -1]], 1) ** 2).sum()).backward()
    for got, want in ((a.grad, wa.grad), (b.grad, wb.grad), (init.grad, wi.grad)):
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("dtype, log", [(torch.float32, False), (torch.complex64, False), (torch.float32, True)],
                         ids=["f32", "c64", "log"])
@pytest.mark.parametrize("reverse", [False, True], ids=["fwd", "rev"])
@pytest.mark.parametrize("layout", LAYOUTS, ids=["BTC", "BCT"])
@pytest.mark.parametrize("plan", sorted(PLANS))
def test_restart_flags_are_zeroed_decays(rng, plan, layout, reverse, dtype, log):
    """``restart``: the forward and the fused backward with restart flags compute the same
    bits as the same kernel given a copy of ``a`` whose decays at the flags are 0 (log
    decays -inf), and ``dL/da`` is 0 at the flags; flags at the first and last steps and
    at tile and chunk boundaries (8-step tiles), with a seed."""
    shape, axis = layout
    n = shape[axis]
    a, b = _data(rng, shape, dtype)
    if log:
        a = -a.real.to(dtype)
    grad = _data(rng, shape, dtype)[1]
    init = _data(rng, shape[:axis] + shape[axis + 1:], dtype)[1]
    flags = torch.zeros(n, dtype=torch.uint8, device=DEVICE)
    flags[[0, 7, 8, n - 1]] = 1
    along = [1] * len(shape)
    along[axis] = n
    at_flags = flags.view(along) != 0
    cut = torch.where(at_flags, torch.tensor(-np.inf if log else 0.0, dtype=dtype, device=DEVICE), a)
    chosen = PLANS[plan](shape[-1] if axis == 1 else 1)
    h = R.linear_recurrence(a, b, init, axis, reverse, plan=chosen, log_space=log, restart=flags)
    expected = R.linear_recurrence(cut, b, init, axis, reverse, plan=chosen, log_space=log)
    assert torch.equal(h, expected)
    grad_a, grad_b = R.linear_recurrence_backward(a, h, grad, init, axis, reverse, plan=chosen, log_space=log,
                                                  restart=flags)
    want_a, want_b = R.linear_recurrence_backward(cut, expected, grad, init, axis, reverse, plan=chosen,
                                                  log_space=log)
    assert torch.equal(grad_b, want_b)
    torch.testing.assert_close(grad_a, torch.where(at_flags, torch.zeros_like(want_a), want_a), rtol=0, atol=0)


@pytest.mark.parametrize("dtype, log", [(torch.float64, False), (torch.complex128, False), (torch.float64, True)],
                         ids=["f64", "c128", "log"])
@pytest.mark.parametrize("reverse", [False, True], ids=["fwd", "rev"])
def test_packed_sequences_through_the_api(rng, reverse, dtype, log):
    """``offsets`` on the Triton backend (restart flags in the kernel): h, the final states
    and the gradients of a, b and init (a decay broadcast over lanes, empty sequences, a
    sequence of one step at either end) against a loop over each sequence (and
    ``gradcheck`` with log decays)."""
    T = 11
    offsets = torch.tensor([0, 1, 1, 5, 10, 10, 11])
    bounds = list(zip(offsets[:-1].tolist(), offsets[1:].tolist()))
    a, b = _data(rng, (2, 3, T), dtype)
    a = (-a.real if log else a).narrow(1, 0, 1).to(dtype).clone().requires_grad_()  # (2, 1, T), broadcast
    b = b.requires_grad_()
    init = _data(rng, (2, 3, len(bounds)), dtype)[1].requires_grad_()

    def run(a, b, init):
        return ps.linear_recurrence(a, b, init=init, axis=2, offsets=offsets, reverse=reverse, return_final=True,
                                    log_space=log, backend="triton")

    def loop(a, b, init):
        decay = (a.exp() if log else a).expand(b.shape)
        pieces, finals = [], []
        for k, (s, e) in enumerate(bounds):
            h = _loop(decay[..., s:e], b[..., s:e], init[..., k], 2, reverse) if e > s else b[..., s:e]
            pieces.append(h)
            finals.append(h[..., 0 if reverse else -1] if e > s else init[..., k])
        return torch.cat(pieces, 2), torch.stack(finals, 2)

    with runtime.recording() as seen:
        h, final = run(a, b, init)
        weights = _data(rng, h.shape, dtype)[1]
        got = torch.autograd.grad((h * weights).real.sum() + final.real.sum(), (a, b, init))
    assert all(launch.constexprs["MODE"][5] for launch in seen if launch.kernel is R.recurrence_kernel)
    want_h, want_final = loop(a, b, init)
    torch.testing.assert_close(h, want_h)
    torch.testing.assert_close(final, want_final)
    want = torch.autograd.grad((want_h * weights).real.sum() + want_final.real.sum(), (a, b, init))
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
    if log:  # -inf decays at the restarts: the numerical gradient as well
        assert torch.autograd.gradcheck(run, (a, b, init), fast_mode=True)


def test_empty_and_single_step(rng):
    for shape in ((0, 5), (3, 0), (3, 1)):
        a, b = _data(rng, shape, torch.float32)
        h = R.linear_recurrence(a, b, None, 1, False)
        assert h.shape == shape
        np.testing.assert_allclose(h.cpu().numpy(), reference_linear_recurrence(a.cpu(), b.cpu(), axis=1), rtol=1e-6)


def test_default_plans_split_time_only_for_few_lanes():
    assert not R.plan_for(8, 1024, 4096, 132, False).lookback  # (B, T, C), 32768 lanes
    assert not R.plan_for(8 * 4096, 1024, 1, 132, False).lookback  # (B, C, T), 32768 lanes
    assert R.plan_for(64, 1 << 20, 1, 132, False).lookback  # 64 lanes of 2^20
    assert R.plan_for(1, 1 << 26, 1, 132, False).lookback  # one lane of 2^26
    assert R.plan_for(1, 1 << 20, 64, 132, False).lookback  # (1, 2^20, 64)
    # The fused backward walks where the forward does, on tiles of half the elements (five
    # arrays in registers); few long lanes and few lane blocks of contiguous lanes a
    # look-back over fewer steps.
    for lanes, T, Q in ((8 * 1024, 4096, 1), (8, 1024, 4096), (8, 4096, 1024), (8, 2048, 1), (100, 2000, 1),
                        (1, 1025, 1), (4096, 64, 1), (2, 40, 3000)):
        forward, backward = R.plan_for(lanes, T, Q, 132, False), R.plan_for(lanes, T, Q, 132, False, True)
        assert not forward.lookback and not backward.lookback, (lanes, T, Q)
        halved = backward.block_time * backward.block_lanes * 2 == forward.block_time * forward.block_lanes
        # 40 steps: the lane-contiguous tile was already cut to the lane's length
        assert halved or (T == 40 and backward == forward), (lanes, T, Q)
    for lanes, T, Q in ((64, 1 << 20, 1), (1, 1 << 26, 1)):  # few long lanes: half the steps, as many warps
        forward, backward = R.plan_for(lanes, T, Q, 132, False), R.plan_for(lanes, T, Q, 132, False, True)
        assert forward.lookback and backward.lookback, (lanes, T, Q)
        assert backward.block_time * 2 == forward.block_time and backward.num_warps == forward.num_warps
    for lanes, T, Q in ((1, 1 << 20, 64), (1, 32768, 1024), (1, 1 << 16, 3)):
        forward, backward = R.plan_for(lanes, T, Q, 132, False), R.plan_for(lanes, T, Q, 132, False, True)
        assert forward.lookback and backward.lookback, (lanes, T, Q)
        assert forward.block_lanes == backward.block_lanes and backward.block_time * 2 == forward.block_time


# ---------------------------------------------------------------------------
# GPU.

def _affine_reference(a, b, axis, reverse):
    """h by the generic scan of the affine monoid in float64: another kernel family."""
    monoid = AFFINE_BACKWARD if reverse else ps.AFFINE
    return ps.scan((a.double().contiguous(), b.double().contiguous()), monoid, axis=axis, reverse=reverse)[1]


GPU_SHAPES = [((8, 1024, 4096), 1), ((8, 4096, 1024), 1), ((1, 64, 1 << 20), 2), ((1, 1, 1 << 26), 2),
              ((4, 8192, 1000), 2), ((1, 1 << 18, 24), 1)]


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("reverse", [False, True], ids=["fwd", "rev"])
@pytest.mark.parametrize("layout", GPU_SHAPES, ids=lambda v: "x".join(map(str, v[0])) if isinstance(v, tuple) else v)
def test_gpu_shapes_forward_backward(layout, reverse):
    shape, axis = layout
    gen = torch.Generator(device="cuda").manual_seed(1)
    a = torch.rand(shape, device="cuda", generator=gen) * 0.5 + 0.45
    b = torch.randn(shape, device="cuda", generator=gen)
    grad = torch.randn(shape, device="cuda", generator=gen)
    lanes = shape[:axis] + shape[axis + 1:]
    init = torch.randn(lanes, device="cuda", generator=gen)
    h = R.linear_recurrence(a, b, init, axis, reverse)
    b_seeded = b.clone()
    first = (slice(None),) * axis + (shape[axis] - 1 if reverse else 0,)
    b_seeded[first] += a[first] * init
    torch.testing.assert_close(h.double(), _affine_reference(a, b_seeded, axis, reverse), rtol=1e-4, atol=1e-4)
    grad_a, grad_b = R.linear_recurrence_backward(a, h, grad, init, axis, reverse)
    a_next = torch.zeros_like(a)
    n = shape[axis]
    if reverse:
        a_next.narrow(axis, 1, n - 1).copy_(a.narrow(axis, 0, n - 1))
    else:
        a_next.narrow(axis, 0, n - 1).copy_(a.narrow(axis, 1, n - 1))
    expected_b = _affine_reference(a_next, grad, axis, not reverse)
    torch.testing.assert_close(grad_b.double(), expected_b, rtol=1e-4, atol=1e-4)
    h_prev = torch.empty_like(h)
    seed = init.unsqueeze(axis)
    if reverse:
        h_prev.narrow(axis, 0, n - 1).copy_(h.narrow(axis, 1, n - 1))
        h_prev.narrow(axis, n - 1, 1).copy_(seed)
    else:
        h_prev.narrow(axis, 1, n - 1).copy_(h.narrow(axis, 0, n - 1))
        h_prev.narrow(axis, 0, 1).copy_(seed)
    torch.testing.assert_close(grad_a.double(), expected_b * h_prev.double(), rtol=1e-4, atol=1e-4)


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.complex64], ids=["bf16", "c64"])
def test_gpu_16_bit_and_complex_gradients_match_torch(dtype):
    gen = torch.Generator(device="cuda").manual_seed(2)
    shape = (4, 2048, 256)
    a = (torch.rand(shape, device="cuda", generator=gen) * 0.5 + 0.45).to(dtype)
    b = torch.randn(shape, device="cuda", generator=gen).to(dtype)
    a.requires_grad_()
    b.requires_grad_()
    h = ps.linear_recurrence(a, b, axis=1)
    grad = torch.randn(shape, device="cuda", generator=gen).to(dtype)
    h.backward(grad)
    wa, wb = (_wide(t.detach()).requires_grad_() for t in (a, b))
    ref = _affine_reference(wa.detach(), wb.detach(), 1, False)
    tol = 2e-2 if dtype == torch.bfloat16 else 1e-4
    torch.testing.assert_close(_wide(h.detach()), ref.to(_wide(h).dtype), rtol=tol, atol=tol)
    assert a.grad.dtype == dtype and b.grad.dtype == dtype


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_gpu_more_than_2_to_31_elements():
    """One lane of 2^31 + 7 steps: 64-bit offsets.  The decays are <= 0.5, so h[t]
    depends on the last ~60 steps only, and the tail is checked by a short loop."""
    n = (1 << 31) + 7
    if torch.cuda.get_device_properties(0).total_memory < 60 * n:  # a, b, h, grads: 5 float32 arrays
        pytest.skip("needs about 45 GB of GPU memory")
    gen = torch.Generator(device="cuda").manual_seed(3)
    a = torch.rand(n, device="cuda", generator=gen) * 0.5
    b = torch.randn(n, device="cuda", generator=gen)
    h = R.linear_recurrence(a, b, None, 0, False)
    for end in (1 << 31, n):
        lo = end - 200
        expected = _loop(a[lo:end].double(), b[lo:end].double(), None, 0, False)
        torch.testing.assert_close(h[end - 50:end].double(), expected[-50:], rtol=1e-5, atol=1e-5)
    grad = torch.ones_like(b)
    grad_a, grad_b = R.linear_recurrence_backward(a, h, grad, None, 0, False)
    del grad_a
    lo = (1 << 31) - 100
    wb = b[lo:lo + 300].double().requires_grad_()
    (eb,) = torch.autograd.grad(_loop(a[lo:lo + 300].double(), wb, None, 0, False), (wb,), grad[lo:lo + 300].double())
    torch.testing.assert_close(grad_b[lo:lo + 100].double(), eb[:100], rtol=1e-5, atol=1e-5)


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("shape,axis", [((1, 4, 1 << 20), 2), ((16, 512, 256), 1)], ids=["lookback", "walk"])
def test_gpu_cuda_graph_capture_forward_backward(shape, axis):
    gen = torch.Generator(device="cuda").manual_seed(4)
    a = (torch.rand(shape, device="cuda", generator=gen) * 0.5 + 0.45).requires_grad_()
    b = torch.randn(shape, device="cuda", generator=gen, requires_grad=True)
    grad = torch.randn(shape, device="cuda", generator=gen)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # warm up (compiles) outside the capture
        ps.linear_recurrence(a, b, axis=axis).backward(grad)
    torch.cuda.current_stream().wait_stream(stream)
    a.grad = b.grad = None
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        h = ps.linear_recurrence(a, b, axis=axis)
        h.backward(grad)
    for _ in range(3):  # new data each replay: the status words must not leak between replays
        with torch.no_grad():
            a.copy_(torch.rand(shape, device="cuda", generator=gen) * 0.5 + 0.45)
            b.copy_(torch.randn(shape, device="cuda", generator=gen))
            a.grad.zero_()
            b.grad.zero_()
        graph.replay()
        torch.cuda.synchronize()
        eager_h = R.linear_recurrence(a.detach(), b.detach(), None, axis, False)
        eager_a, eager_b = R.linear_recurrence_backward(a.detach(), eager_h, grad, None, axis, False)
        torch.testing.assert_close(h, eager_h, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(a.grad, eager_a, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(b.grad, eager_b, rtol=1e-5, atol=1e-5)


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_gpu_deterministic_is_bitwise_repeatable():
    gen = torch.Generator(device="cuda").manual_seed(5)
    a = torch.rand(1, 1, 1 << 24, device="cuda", generator=gen) * 0.5 + 0.45
    b = torch.randn(1, 1, 1 << 24, device="cuda", generator=gen)
    first = R.linear_recurrence(a, b, None, 2, False, deterministic=True)
    for _ in range(3):
        assert torch.equal(R.linear_recurrence(a, b, None, 2, False, deterministic=True), first)


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("stages", [2, 3])
@pytest.mark.parametrize("layout", [((4, 1000, 96), 1), ((3, 40, 3000), 2)], ids=["BTC", "BCT"])
def test_pipelined_walk_is_bitwise_the_plain_walk(stages, layout):
    """The walk's chunk loop software-pipelined over 2-3 stages (compiled only: the
    interpreter runs the plain loop) computes the same bits as the plain loop: forward,
    fused backward and the lane maps."""
    shape, axis = layout
    rng = np.random.default_rng(stages)
    a, b = _data(rng, shape, torch.float32)
    grad = _data(rng, shape, torch.float32)[1]
    bl = 32 if axis == 1 else 4
    plain = R.RecurrencePlan(lookback=False, block_time=4096 // bl, block_lanes=bl)
    piped = R.RecurrencePlan(lookback=False, block_time=4096 // bl, block_lanes=bl, stages=stages)
    h = R.linear_recurrence(a, b, None, axis, False, plan=plain)
    assert torch.equal(R.linear_recurrence(a, b, None, axis, False, plan=piped), h)
    for got, want in zip(R.linear_recurrence_backward(a, h, grad, None, axis, False, plan=piped),
                         R.linear_recurrence_backward(a, h, grad, None, axis, False, plan=plain)):
        assert torch.equal(got, want)
    for got, want in zip(R.linear_recurrence_total(a, b, axis, True, plan=piped),
                         R.linear_recurrence_total(a, b, axis, True, plan=plain)):
        assert torch.equal(got, want)


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_init_on_another_device_is_refused_by_name():
    """A per-lane init tensor on the CPU with a and b on the GPU is refused naming init
    (not a device error from inside the sequence arithmetic); a 0-d one is a scalar."""
    rng = np.random.default_rng(5)
    a_host, b_host = rng.random((3, 8)).astype(np.float32), rng.random((3, 8)).astype(np.float32)
    a, b = torch.from_numpy(a_host).to(DEVICE), torch.from_numpy(b_host).to(DEVICE)
    for offsets in (None, [0, 3, 3]):
        with pytest.raises(ValueError, match="init is on cpu"):
            ps.linear_recurrence(a, b, init=torch.ones(3), offsets=offsets)
    h = ps.linear_recurrence(a, b, init=torch.tensor(2.0))
    np.testing.assert_allclose(h.cpu().numpy(), reference_linear_recurrence(a_host, b_host, init=2.0), rtol=1e-5)


@pytest.mark.skipif(CUDA, reason="a fake compiled kernel over the interpreter: CPU tensors")
@pytest.mark.parametrize("reverse", [False, True], ids=["fwd", "rev"])
@pytest.mark.parametrize("layout", LAYOUTS, ids=["BTC", "BCT"])
@pytest.mark.parametrize("plan", sorted(PLANS))
def test_planned_replay_relaunches_with_each_calls_tensors(rng, monkeypatch, plan, layout, reverse):
    """After a signature's first launch, later calls replay its compiled kernel (no
    launch key, no argument building): a fake compiled kernel whose ``run`` runs the
    interpreter on exactly the arguments a replay passes.  New data and seeds every call,
    forward and fused backward.  A look-back launch, replayed or not, takes the status
    buffers the engine holds at that moment, a new epoch and the tile base after the
    last launch's tiles (the interpreter runs tiles in order, so stale status words
    would not show in the results: the arguments are checked).  A misaligned view and a
    complex tensor of the same shape are other signatures."""
    import types

    from prefixscan.backends.triton.engine.state import state_for

    interpret = runtime.launch_kernel
    full, replayed, protocol = [], [], []

    def note(arguments, grid):
        state = state_for(torch.device("cpu"), 0)
        protocol.append((arguments[R._AT], arguments[R._AT + 1], grid))
        if chosen.lookback:  # the buffers reserved for this launch (the walk has a placeholder)
            assert arguments[1][0] is (state.status if state.status is not None else state.flags)

    def compiled_for(launch):
        names = launch.kernel.arg_names
        nargs = len(launch.args)

        def run(grid, _y, _z, _stream, _function, _metadata, _launch_metadata, _enter, _exit, *arguments):
            replayed.append(grid)
            note(arguments, grid)
            launch.kernel[(grid,)](*arguments[:nargs], num_warps=launch.num_warps,
                                   **dict(zip(names[nargs:], arguments[nargs:])))

        return types.SimpleNamespace(function=None, packed_metadata=None, run=run)

    def launch_kernel(launch):
        full.append(launch)
        note(launch.args, launch.grid)
        interpret(launch)
        return compiled_for(launch)

    monkeypatch.setattr(runtime, "launch_kernel", launch_kernel)
    R._replays.clear()
    fake_torch = types.SimpleNamespace(_C=types.SimpleNamespace(_cuda_getCurrentRawStream=lambda index: 0,
                                                                _cuda_isCurrentStreamCapturing=lambda: False))
    shape, axis = layout
    lanes = shape[:axis] + shape[axis + 1:]
    chosen = PLANS[plan](shape[-1] if axis == 1 else 1)
    for call in range(3):
        a, b = _data(rng, shape, torch.float32)
        init, grad = _data(rng, lanes, torch.float32)[1], _data(rng, shape, torch.float32)[1]
        h = R.linear_recurrence(a, b, init, axis, reverse, plan=chosen)
        grad_a, grad_b = R.linear_recurrence_backward(a, h, grad, init, axis, reverse, plan=chosen)
        for relaunch in R._replays.values():
            relaunch.torch = fake_torch
        assert len(full) == 2 and len(replayed) == 2 * call  # planned by the first call, replayed after
        wa, wb = (_wide(t).requires_grad_() for t in (a, b))
        expected = _loop(wa, wb, _wide(init), axis, reverse)
        ea, eb = torch.autograd.grad(expected, (wa, wb), _wide(grad))
        for got, want in ((h, expected.detach()), (grad_a, ea), (grad_b, eb)):
            torch.testing.assert_close(_wide(got), want, rtol=2e-5, atol=2e-5)
    if chosen.lookback:
        for (base, epoch, grid), (next_base, next_epoch, _) in zip(protocol, protocol[1:]):
            assert next_base == base + grid and next_epoch > epoch
    wider = torch.empty(a.numel() + 1)
    odd = wider[1:].view(shape).copy_(a)  # 4 bytes past a 16-byte boundary: compiled for aligned pointers
    torch.testing.assert_close(R.linear_recurrence(odd, b, init, axis, reverse, plan=chosen), h, rtol=0, atol=0)
    assert len(full) == 3
    # complex64 hands the kernel float32 views, as float32 does: a signature of its own all the same
    ca, cb = _data(rng, shape, torch.complex64)
    got = R.linear_recurrence(ca, cb, None, axis, reverse, plan=chosen)
    assert len(full) == 4
    torch.testing.assert_close(_wide(got), _loop(_wide(ca), _wide(cb), None, axis, reverse), rtol=2e-5, atol=2e-5)
    R._replays.clear()  # the fake kernels go with the test


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_host_segments_do_not_wait_on_the_gpu():
    """Offsets and flags given on the host (a list, NumPy arrays) are checked there and
    copied without a synchronization, so a training loop keeps queuing work: torch's
    sync debug mode raises on none of these calls, the host gets past them while the GPU
    still sleeps on work queued before, and the caller may change its arrays at once
    (the copies took the values as they were); results against the loop."""
    gen = torch.Generator(device="cuda").manual_seed(5)
    a = torch.rand((2, 300, 40), device="cuda", generator=gen) * 0.5 + 0.45
    b = torch.randn((2, 300, 40), device="cuda", generator=gen)
    x = torch.randint(-9, 9, (1000,), device="cuda", dtype=torch.int32, generator=gen)
    flags = np.zeros(1000, dtype=bool)
    flags[[0, 3, 500, 999]] = True
    cuts = [0, 7, 150, 300]
    for kind in ("list", "numpy"):
        given = list(cuts) if kind == "list" else np.array(cuts[:-1], dtype=np.uint16)
        given_flags, given_cuts = flags.copy(), [0, 1, 400]
        calls = [lambda: ps.linear_recurrence(a, b, axis=1, offsets=given),
                 lambda: ps.segmented_scan(x, offsets=given_cuts), lambda: ps.segmented_scan(x, flags=given_flags)]
        for call in calls:  # compiled and cached first
            call()
        torch.cuda.synchronize()
        previous = torch.cuda.get_sync_debug_mode()
        torch.cuda.set_sync_debug_mode("error")
        try:
            torch.cuda._sleep(100_000_000)  # tens of milliseconds of GPU time queued ahead of the calls
            h, by_offsets, by_flags = (call() for call in calls)
            ahead = not torch.cuda.current_stream().query()
            given[1] = 250  # the caller's arrays change while the copies still wait in the queue
            given_cuts[1] = 999
            given_flags[:] = ~given_flags
        finally:
            torch.cuda.set_sync_debug_mode(previous)
        assert ahead, kind
        want = np.concatenate([reference_linear_recurrence(a[:, s:e].double().cpu().numpy(),
                                                           b[:, s:e].double().cpu().numpy(), axis=1)
                               for s, e in zip(cuts[:-1], cuts[1:])], axis=1)
        np.testing.assert_allclose(h.double().cpu().numpy(), want, rtol=1e-5, atol=1e-5)
        host = x.cpu().numpy().astype(np.int64)
        pieces = [np.cumsum(host[s:e]) for s, e in ((0, 1), (1, 400), (400, 1000))]
        np.testing.assert_array_equal(by_offsets.cpu().numpy(), np.concatenate(pieces))
        heads = np.flatnonzero(flags).tolist() + [1000]
        pieces = [np.cumsum(host[s:e]) for s, e in zip(heads[:-1], heads[1:])]
        np.testing.assert_array_equal(by_flags.cpu().numpy(), np.concatenate(pieces))
