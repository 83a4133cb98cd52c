"""Gradients of prefixscan's scans and linear recurrences on torch tensors.

``torch.autograd.gradcheck`` in float64 on CPU tensors, through the CPU backend
(every operator, direction, seed, order and tuple size) and through the Triton
kernels in the interpreter (a smaller set, ``fast_mode``); comparisons with
torch's own ``cumsum`` / ``cumprod`` / ``cummax`` / ``cummin`` /
``logcumsumexp`` gradients where the gradient is not unique (ties, zeros);
``linear_recurrence`` for state-space models (broadcast coefficients, complex
values, 16-bit inputs, packed sequences, final states).  GPU-marked tests
compare with torch on the device.

The tests call the public functions, which route such tensors to the custom
operators (the ``torch_ops`` modules of prefixscan.primitives).
"""

from __future__ import annotations

import math
import pathlib
import runpy

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import prefixscan as ps  # noqa: E402
from prefixscan._environment import interpreter_mode  # noqa: E402
from prefixscan.primitives.recurrence import affine  # noqa: E402
from prefixscan.primitives.recurrence import torch_ops as recurrence_ops  # noqa: E402
from prefixscan.primitives.scan.params import DIFFERENTIABLE_OPS  # noqa: E402
from torch.autograd import gradcheck  # noqa: E402

CUDA = torch.cuda.is_available()
F64 = torch.float64
EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"



triton_interpreter = pytest.mark.skipif(not (interpreter_mode() and not CUDA),
                                        reason="the Triton interpreter runs CPU tensors without a GPU")
BACKENDS = ["cpu", pytest.param("triton", marks=[pytest.mark.interpreter, triton_interpreter])]


scan = ps.scan  # the public API: autograd and torch.compile reach the custom operators through it
linear_recurrence = ps.linear_recurrence


def cumulative(name):
    return getattr(ps, name)


def rand(*shape, dtype=F64, low=-1.0, high=1.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (low + (high - low) * torch.rand(shape, generator=g, dtype=F64)).to(dtype).requires_grad_()


def grads(fn, inputs, seed=1):
    """The gradients of ``sum(fn(*inputs) * w)`` for a fixed random ``w``."""
    out = fn(*inputs)
    w = torch.randn(out.shape, generator=torch.Generator().manual_seed(seed), dtype=F64).to(out.dtype)
    return torch.autograd.grad((out * w).sum(), inputs)


# ---------------------------------------------------------------------------
# Scans: gradcheck through the CPU backend.

@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("inclusive", [True, False])
@pytest.mark.parametrize("op", DIFFERENTIABLE_OPS)
def test_gradcheck_scan(op, inclusive, reverse):
    x, init = rand(3, 5, seed=2), rand(3, seed=3)
    assert gradcheck(lambda x, i: scan(x, op, axis=1, inclusive=inclusive, reverse=reverse, init=i), (x, init))
    if inclusive or op in ("add", "mul"):  # max/min/logaddexp seed an exclusive scan with +-inf
        assert gradcheck(lambda x: scan(x, op, axis=1, inclusive=inclusive, reverse=reverse), (x,))


@pytest.mark.parametrize("axis", [0, -1, None])
@pytest.mark.parametrize("op", DIFFERENTIABLE_OPS)
def test_gradcheck_axes(op, axis):
    x = rand(4, 3, 2, seed=4)
    init = rand(*((3, 2) if axis == 0 else (4, 3) if axis == -1 else ()), seed=5)
    assert gradcheck(lambda x, i: scan(x, op, axis=axis, init=i), (x, init))


@pytest.mark.parametrize("order, tuple_size, inclusive, reverse", [
    (2, 1, True, False), (1, 2, False, True), (3, 2, True, True), (2, 3, False, False)])
@pytest.mark.parametrize("op", DIFFERENTIABLE_OPS)
def test_gradcheck_order_and_tuple_size(op, order, tuple_size, inclusive, reverse):
    low = 0.5 if op == "mul" else -1.0  # keep products of products away from overflow
    x = rand(2, 6, low=low, seed=6)
    init = rand(2, tuple_size, low=low, seed=7) if tuple_size > 1 else rand(2, low=low, seed=7)
    kwargs = dict(axis=1, order=order, tuple_size=tuple_size, inclusive=inclusive, reverse=reverse)
    assert gradcheck(lambda x, i: scan(x, op, init=i, **kwargs), (x, init))


def test_init_broadcasts_and_takes_the_summed_gradient():
    x, init = rand(3, 4, seed=8), rand(1, seed=9)
    assert gradcheck(lambda x, i: scan(x, "add", axis=1, init=i), (x, init))
    (g,) = torch.autograd.grad(scan(x, "add", axis=1, init=init).sum(), (init,))
    assert g.shape == (1,) and g.item() == pytest.approx(12.0)


def test_scalar_init_and_accumulator_dtype():
    x = rand(2, 5, dtype=torch.float32, seed=10)
    y = scan(x, "add", axis=1, init=2.0, dtype="float64")
    assert y.dtype == F64
    (g,) = torch.autograd.grad(y.sum(), (x,))
    assert g.dtype == torch.float32
    torch.testing.assert_close(g, torch.arange(5, 0, -1, dtype=torch.float32).expand(2, 5))


# ---------------------------------------------------------------------------
# Against torch's own gradients where they are not unique (ties, zeros).

def _flip_if(fn, reverse, axis):
    return (lambda x: fn(x.flip(axis)).flip(axis)) if reverse else fn


@pytest.mark.parametrize("reverse", [False, True])
def test_cumprod_with_zeros_matches_torch(reverse):
    x = torch.tensor([[0.0, 2.0, 3.0, -1.5, 2.0],
                      [1.5, 0.0, 2.0, 0.0, 3.0],
                      [2.0, -1.0, 0.5, 3.0, 0.0],
                      [0.0, 0.0, 0.0, 2.0, 1.0],
                      [1.0, 2.0, 3.0, 4.0, 5.0]], dtype=F64, requires_grad=True)
    expected = grads(_flip_if(lambda t: torch.cumprod(t, 1), reverse, 1), (x,))
    got = grads(lambda t: cumulative("cumprod")(t, axis=1, reverse=reverse), (x,))
    torch.testing.assert_close(got, expected)
    assert gradcheck(lambda t: scan(t, "mul", axis=1, reverse=reverse), (x,))  # a polynomial: exact at zeros


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cummax_cummin_ties_and_nan_match_torch(name):
    x = torch.tensor([[1.0, 1.0, 0.0, 1.0, 2.0, 2.0],
                      [3.0, -1.0, 3.0, 3.0, 0.0, 4.0],
                      [0.5, math.nan, 2.0, math.nan, 1.0, 0.0]], dtype=F64, requires_grad=True)
    expected = grads(lambda t: getattr(torch, name)(t, 1).values, (x,))
    got = grads(lambda t: cumulative(name)(t, axis=1), (x,))
    torch.testing.assert_close(got, expected)


@pytest.mark.parametrize("reverse", [False, True])
def test_logaddexp_matches_logcumsumexp(reverse):
    x = rand(3, 7, low=-4.0, high=4.0, seed=11)
    expected = grads(_flip_if(lambda t: torch.logcumsumexp(t, 1), reverse, 1), (x,))
    got = grads(lambda t: scan(t, "logaddexp", axis=1, reverse=reverse), (x,))
    torch.testing.assert_close(got, expected)


@pytest.mark.parametrize("name, torch_fn", [("cumsum", torch.cumsum), ("cumprod", torch.cumprod),
                                            ("cummax", lambda t, d: torch.cummax(t, d).values),
                                            ("cummin", lambda t, d: torch.cummin(t, d).values)])
def test_cumulative_functions_match_torch(name, torch_fn):
    x = rand(4, 6, dtype=torch.float32, low=0.5, high=1.5, seed=12)
    fn = cumulative(name)
    torch.testing.assert_close(fn(x, axis=0), torch_fn(x, 0))
    torch.testing.assert_close(grads(lambda t: fn(t, axis=0), (x,)), grads(lambda t: torch_fn(t, 0), (x,)))
    flat = grads(lambda t: fn(t), (x,))  # axis=None scans the flattened tensor, as NumPy does
    torch.testing.assert_close(flat, grads(lambda t: torch_fn(t.reshape(-1), 0), (x,)))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("op", ["add", "logaddexp"])
def test_16_bit_gradients_follow_float32(op, dtype):
    x = rand(3, 64, dtype=dtype, seed=13)
    got = grads(lambda t: scan(t, op, axis=1), (x,))[0]
    x32 = x.detach().float().requires_grad_()
    expected = grads(lambda t: scan(t, op, axis=1), (x32,))[0]
    assert got.dtype == dtype
    torch.testing.assert_close(got.float(), expected, rtol=3e-2, atol=3e-2)


# ---------------------------------------------------------------------------
# The Triton kernels in the interpreter, and the plain path.

@pytest.mark.interpreter
@triton_interpreter
@pytest.mark.parametrize("op", DIFFERENTIABLE_OPS)
def test_gradcheck_triton_interpreter(op):
    x, init = rand(2, 6, seed=14), rand(2, 2, seed=15)
    kwargs = dict(axis=1, inclusive=False, reverse=True, tuple_size=2, order=2, backend="triton")
    assert gradcheck(lambda x, i: scan(x, op, init=i, **kwargs), (x, init), fast_mode=True)


def test_no_grad_mode_takes_the_plain_path():
    x = rand(3, 4, seed=16)
    with torch.no_grad():
        y = scan(x, "add", axis=1)
    assert not y.requires_grad
    torch.testing.assert_close(y, torch.cumsum(x.detach(), 1))


# ---------------------------------------------------------------------------
# What has no gradient says so.

def test_user_monoid_with_grad_is_refused():
    saturating = ps.Monoid(lambda a, b: ps.minimum(a + b, 10.0), 0.0, name="saturating_add")
    with pytest.raises(TypeError, match="'add', 'mul', 'max', 'min', 'logaddexp'"):
        scan(rand(4), saturating)


def test_out_with_grad_is_refused():
    x = rand(4, seed=17)
    with pytest.raises(RuntimeError, match="out"):
        scan(x, "add", out=torch.empty(4, dtype=F64))


def test_affine_struct_scan_is_differentiable():
    assert ps.AFFINE is affine.AFFINE
    a, b = rand(2, 5, low=0.2, high=0.9, seed=18), rand(2, 5, seed=19)
    coef, offset = scan((a, b), affine.AFFINE, axis=1)
    torch.testing.assert_close(offset, linear_recurrence(a, b, axis=1))
    torch.testing.assert_close(coef, torch.cumprod(a, 1))
    assert gradcheck(lambda a, b: scan((a, b), affine.AFFINE, axis=1), (a, b))
    back, _ = scan((a, b), affine.AFFINE_BACKWARD, axis=1, reverse=True)
    torch.testing.assert_close(back, torch.cumprod(a.flip(1), 1).flip(1))
    with pytest.raises(TypeError, match="linear_recurrence"):
        scan((a, b), affine.AFFINE, axis=1, inclusive=False)


# ---------------------------------------------------------------------------
# linear_recurrence for state-space models.

def reference_recurrence(a, b, init=None, reverse=False):
    """h[t] = a[t] h[t-1] + b[t] along the last axis, a Python loop over time."""
    a, b = torch.broadcast_tensors(a, b)
    h = torch.zeros_like(b[..., 0]) if init is None else init.expand(b.shape[:-1]).to(b.dtype)
    steps = range(b.shape[-1] - 1, -1, -1) if reverse else range(b.shape[-1])
    out = {}
    for t in steps:
        h = a[..., t] * h + b[..., t]
        out[t] = h
    return torch.stack([out[t] for t in range(b.shape[-1])], -1)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("backend", BACKENDS)
def test_gradcheck_linear_recurrence(backend, reverse):
    a, b, init = rand(2, 6, low=0.1, high=0.9, seed=20), rand(2, 6, seed=21), rand(2, seed=22)
    h = linear_recurrence(a, b, init=init, reverse=reverse, backend=backend)
    torch.testing.assert_close(h, reference_recurrence(a, b, init, reverse))
    assert gradcheck(lambda a, b, i: linear_recurrence(a, b, init=i, reverse=reverse, backend=backend), (a, b, init),
                     fast_mode=backend == "triton")


def test_linear_recurrence_time_axis_not_last():
    a, b, init = rand(5, 2, 3, low=0.1, high=0.9, seed=23), rand(5, 2, 3, seed=24), rand(2, 3, seed=25)
    h = linear_recurrence(a, b, init=init, axis=0)
    torch.testing.assert_close(h, reference_recurrence(a.movedim(0, -1), b.movedim(0, -1), init).movedim(-1, 0))
    assert gradcheck(lambda a, b, i: linear_recurrence(a, b, init=i, axis=0), (a, b, init))


@pytest.mark.parametrize("a_shape", [(3, 1), (7,), ()])
def test_linear_recurrence_broadcasts_a(a_shape):
    """A per-channel decay (3, 1), a per-step gate shared by the channels (7,), one scalar."""
    a, b = rand(*a_shape, low=0.1, high=0.9, seed=26), rand(3, 7, seed=27)
    h = linear_recurrence(a, b)
    assert h.shape == (3, 7)
    torch.testing.assert_close(h, reference_recurrence(a, b))
    assert gradcheck(lambda a, b: linear_recurrence(a, b), (a, b))


def test_linear_recurrence_takes_a_python_number():
    b = rand(2, 5, seed=42)
    torch.testing.assert_close(linear_recurrence(0.5, b), reference_recurrence(torch.tensor(0.5, dtype=F64), b))
    assert gradcheck(lambda b: linear_recurrence(0.5, b, reverse=True), (b,))
    np.testing.assert_allclose(linear_recurrence(0.5, b.detach().numpy()), linear_recurrence(0.5, b).detach())
    with pytest.raises(TypeError, match="a"):
        linear_recurrence(0.5, torch.ones(3, dtype=torch.int64))


@pytest.mark.parametrize("backend", BACKENDS)
def test_linear_recurrence_complex(backend):
    g = torch.Generator().manual_seed(28)
    a = (0.9 * torch.rand(2, 5, generator=g, dtype=F64) * torch.exp(1j * torch.rand(2, 5, generator=g,
                                                                                      dtype=F64))).requires_grad_()
    b = torch.randn(2, 5, generator=g, dtype=torch.complex128).requires_grad_()
    init = torch.randn(2, generator=g, dtype=torch.complex128).requires_grad_()
    h = linear_recurrence(a, b, init=init, backend=backend)
    torch.testing.assert_close(h, reference_recurrence(a, b, init))
    assert gradcheck(lambda a, b, i: linear_recurrence(a, b, init=i, backend=backend), (a, b, init),
                     fast_mode=backend == "triton")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_linear_recurrence_16_bit_accumulates_in_float32(dtype):
    g = torch.Generator().manual_seed(29)
    a = (0.8 + 0.2 * torch.rand(4, 300, generator=g)).to(dtype).requires_grad_()
    b = torch.randn(4, 300, generator=g).to(dtype).requires_grad_()
    h = linear_recurrence(a, b, init=torch.ones(4, dtype=dtype))
    expected = reference_recurrence(a.detach().double(), b.detach().double(), torch.ones(4, dtype=F64))
    assert h.dtype == dtype
    # One rounding of the float32 result, not one per step.
    torch.testing.assert_close(h.double(), expected, rtol=1e-2, atol=2e-2)
    ga, gb = torch.autograd.grad(h.float().sum(), (a, b))
    a64, b64 = a.detach().double().requires_grad_(), b.detach().double().requires_grad_()
    ea, eb = torch.autograd.grad(linear_recurrence(a64, b64, init=torch.ones(4, dtype=F64)).sum(), (a64, b64))
    assert ga.dtype == gb.dtype == dtype
    torch.testing.assert_close(gb.double(), eb, rtol=2e-2, atol=5e-2)
    torch.testing.assert_close(ga.double(), ea, rtol=2e-2, atol=0.5)


@pytest.mark.parametrize("reverse", [False, True])
def test_linear_recurrence_packed_sequences_and_final_states(reverse):
    a, b = rand(2, 9, low=0.1, high=0.9, seed=30), rand(2, 9, seed=31)
    init = rand(2, 3, seed=32)  # one seed per lane and sequence
    offsets = torch.tensor([0, 3, 4, 9])
    h, final = linear_recurrence(a, b, init=init, offsets=offsets, return_final=True, reverse=reverse)
    pieces = [reference_recurrence(a[:, s:e], b[:, s:e], init[:, k], reverse)
              for k, (s, e) in enumerate(zip([0, 3, 4], [3, 4, 9]))]
    torch.testing.assert_close(h, torch.cat(pieces, -1))
    torch.testing.assert_close(final, torch.stack([p[:, 0 if reverse else -1] for p in pieces], -1))
    assert gradcheck(lambda a, b, i: linear_recurrence(a, b, init=i, offsets=offsets, return_final=True,
                                                       reverse=reverse), (a, b, init))
    # The same on host arrays (NumPy, CPU backend).
    hn, fn = linear_recurrence(a.detach().numpy(), b.detach().numpy(), init=init.detach().numpy(),
                               offsets=offsets.numpy(), return_final=True, reverse=reverse)
    np.testing.assert_allclose(hn, h.detach().numpy())
    np.testing.assert_allclose(fn, final.detach().numpy())


def test_linear_recurrence_final_state_gradient():
    a, b, init = rand(3, 6, low=0.1, high=0.9, seed=33), rand(3, 6, seed=34), rand(3, seed=35)
    h, final = linear_recurrence(a, b, init=init, return_final=True)
    torch.testing.assert_close(final, h[:, -1])
    assert gradcheck(lambda a, b, i: linear_recurrence(a, b, init=i, return_final=True)[1], (a, b, init))


@pytest.mark.parametrize("offsets, error", [([1, 9], ValueError), ([0, 4, 10], ValueError),
                                            ([0, 5, 4, 9], ValueError), ([0.0, 9.0], TypeError)])
def test_linear_recurrence_bad_offsets(offsets, error):
    a, b = rand(2, 9, seed=36), rand(2, 9, seed=37)
    with pytest.raises(error, match="offsets"):
        linear_recurrence(a, b, offsets=offsets)
    with pytest.raises(error, match="offsets"):
        linear_recurrence(a.detach().numpy(), b.detach().numpy(), offsets=offsets)


def test_linear_recurrence_backward_scans_once(monkeypatch):
    """The backward is one reverse recurrence: no second forward pass."""
    a, b = rand(2, 8, low=0.1, high=0.9, seed=38), rand(2, 8, seed=39)
    h = linear_recurrence(a, b)
    calls = []
    original = recurrence_ops.run_scan
    monkeypatch.setattr(recurrence_ops, "run_scan", lambda *args, **kw: calls.append(1) or original(*args, **kw))
    h.sum().backward()
    assert len(calls) == 1


def test_gated_recurrence_example_trains(monkeypatch, capsys):
    runpy.run_path(str(EXAMPLES / "gated_recurrence.py"), run_name="__main__")
    losses = [float(line.split()[-1]) for line in capsys.readouterr().out.splitlines() if line.startswith("step")]
    assert len(losses) >= 5 and losses[-1] < losses[0]


# ---------------------------------------------------------------------------
# On the GPU: against torch's gradients on the device.

def relative_error(got, expected):
    expected = expected.to(torch.complex128 if expected.is_complex() else F64)
    return ((got.to(expected.dtype) - expected).norm() / expected.norm()).item()


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("name, torch_fn", [("cumsum", torch.cumsum), ("cumprod", torch.cumprod),
                                            ("cummax", lambda t, d: torch.cummax(t, d).values),
                                            ("cummin", lambda t, d: torch.cummin(t, d).values),
                                            ("logaddexp", torch.logcumsumexp)])
@pytest.mark.parametrize("shape, axis", [((4, 5000), 1), ((3000, 8), 0)])
def test_gpu_gradients_match_torch(name, torch_fn, shape, axis):
    g = torch.Generator(device="cuda").manual_seed(40)
    low, high = (0.99, 1.01) if name == "cumprod" else (-2.0, 2.0)
    x = low + (high - low) * torch.rand(shape, generator=g, device="cuda", dtype=torch.float32)
    if name == "cumprod":
        x[1, 2] = x[2, 3] = x[2, 5] = 0.0  # zeros take the exact path
    x.requires_grad_()
    fn = (lambda t: scan(t, "logaddexp", axis=axis)) if name == "logaddexp" else (
        lambda t: cumulative(name)(t, axis=axis))
    w = torch.randn(shape, generator=g, device="cuda")
    got = torch.autograd.grad((fn(x) * w).sum(), (x,))[0]
    expected = torch.autograd.grad((torch_fn(x, axis) * w).sum(), (x,))[0]
    assert got.device == x.device and got.dtype == torch.float32
    assert relative_error(got, expected) < 1e-4


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.complex64])
def test_gpu_linear_recurrence_gradients(dtype):
    """Per-channel decays (broadcast), final states; float64 / complex128 as the reference."""
    g = torch.Generator(device="cuda").manual_seed(41)
    real = torch.float32 if dtype == torch.complex64 else dtype
    a = (0.9 + 0.1 * torch.rand(8, 1, 2048, generator=g, device="cuda")).to(real)
    if dtype == torch.complex64:
        a = a * torch.exp(0.1j * torch.rand(8, 1, 2048, generator=g, device="cuda"))
    b = torch.randn(8, 16, 2048, generator=g, device="cuda").to(dtype)
    wide = torch.complex128 if dtype.is_complex else F64
    a64, b64 = a.to(wide).requires_grad_(), b.to(wide).requires_grad_()
    a, b = a.requires_grad_(), b.requires_grad_()
    w = torch.randn(8, 16, 2048, generator=g, device="cuda")

    def loss(a, b):
        h, final = linear_recurrence(a, b, return_final=True)
        return (h * w.to(h.dtype)).real.float().sum() + final.real.float().sum(), h

    (value, h), (value64, h64) = loss(a, b), loss(a64, b64)
    ga, gb = torch.autograd.grad(value, (a, b))
    ea, eb = torch.autograd.grad(value64, (a64, b64))
    tol = 2e-2 if dtype == torch.bfloat16 else 1e-3
    assert relative_error(h, h64) < tol
    assert relative_error(gb, eb) < tol
    assert relative_error(ga, ea) < tol
