"""Gradients and torch.compile of linear_recurrence(log_space=True) on torch tensors.

``a`` holds log decays, ``h[t] = exp(a[t]) h[t-1] + b[t]``, and its gradient is
with respect to them: ``dL/da[t] = dL/db[t] h[t-1] exp(a[t])``.  ``gradcheck`` in
float64 through the CPU backend (the NumPy scan, and the compiled loop from 8192
elements) and the Triton kernels in the interpreter (small shapes, ``fast_mode``);
the gradients against torch autograd through a float64 plain loop fed ``exp(a)``
(an independent reference); second derivatives; 16-bit inputs; a log decay of
-1000 per step (no NaN anywhere); ``torch.compile(fullgraph=True)`` with no graph
break.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import prefixscan as ps  # noqa: E402
from prefixscan._environment import interpreter_mode  # noqa: E402
from torch.autograd import gradcheck, gradgradcheck  # noqa: E402

CUDA = torch.cuda.is_available()
F64 = torch.float64
triton_interpreter = pytest.mark.skipif(not (interpreter_mode() and not CUDA),
                                        reason="the Triton interpreter runs CPU tensors without a GPU")
BACKENDS = ["cpu", pytest.param("triton", marks=[pytest.mark.interpreter, triton_interpreter])]


def rand(*shape, low=-1.0, high=1.0, seed=0, dtype=F64):
    g = torch.Generator().manual_seed(seed)
    return (low + (high - low) * torch.rand(shape, generator=g, dtype=F64)).to(dtype).requires_grad_()


def loop(la, b, init=None, reverse=False):
    """h[t] = exp(la[t]) h[t-1] + b[t] along the last axis: a differentiable Python loop."""
    a, b = torch.broadcast_tensors(la.exp(), b)
    if not b.shape[-1]:
        return b.clone()
    h = torch.zeros_like(b[..., 0]) if init is None else init.expand(b.shape[:-1])
    out = {}
    for t in (range(b.shape[-1] - 1, -1, -1) if reverse else range(b.shape[-1])):
        h = a[..., t] * h + b[..., t]
        out[t] = h
    return torch.stack([out[t] for t in range(b.shape[-1])], -1)


@pytest.mark.parametrize("reverse", [False, True], ids=["fwd", "rev"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_gradcheck(backend, reverse):
    la, b, init = rand(2, 6, low=-2.0, high=0.3, seed=1), rand(2, 6, seed=2), rand(2, seed=3)
    h = ps.linear_recurrence(la, b, init=init, reverse=reverse, log_space=True, backend=backend)
    torch.testing.assert_close(h, loop(la, b, init, reverse))
    assert gradcheck(lambda a, b, i: ps.linear_recurrence(a, b, init=i, reverse=reverse, log_space=True,
                                                          backend=backend),
                     (la, b, init), fast_mode=backend == "triton")


@pytest.mark.parametrize("backend", BACKENDS)
def test_gradcheck_packed_sequences_and_final_states(backend):
    """Offsets (an empty sequence included), one seed per sequence, the final states,
    and a log decay broadcast over time; the restart is a log decay of -inf inside."""
    la, b = rand(2, 1, low=-1.5, high=0.2, seed=4), rand(2, 7, seed=5)
    init = rand(2, 4, seed=6)
    offsets = torch.tensor([0, 3, 3, 5, 7])

    def run(la, b, i):
        h, final = ps.linear_recurrence(la, b, init=i, offsets=offsets, return_final=True, log_space=True,
                                        backend=backend)
        return h, final

    h, final = run(la, b, init)
    bounds = [(0, 3), (3, 3), (3, 5), (5, 7)]
    pieces = [loop(la, b[:, s:e], init[:, k]) for k, (s, e) in enumerate(bounds)]
    torch.testing.assert_close(h, torch.cat(pieces, -1))
    torch.testing.assert_close(final, torch.stack([p[:, -1] if p.shape[-1] else init[:, k]
                                                   for k, p in enumerate(pieces)], -1))
    assert gradcheck(run, (la, b, init), fast_mode=backend == "triton")


def test_gradgradcheck_and_time_axis_not_last():
    """Second derivatives (the backward's formulas as differentiable operators)."""
    la, b, init = rand(5, 3, low=-2.0, high=0.3, seed=7), rand(5, 3, seed=8), rand(3, seed=9)
    for reverse in (False, True):
        fn = lambda a, b, i: ps.linear_recurrence(a, b, init=i, axis=0, reverse=reverse, log_space=True)  # noqa: E731
        torch.testing.assert_close(fn(la, b, init), loop(la.T, b.T, init, reverse).T)
        assert gradcheck(fn, (la, b, init))
        assert gradgradcheck(fn, (la, b, init))


@pytest.mark.parametrize("log_space", [False, True], ids=["linear", "log"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_gradgradcheck_of_packed_sequences(backend, log_space):
    """Second derivatives through the restarts of packed sequences (the backward's formulas
    as differentiable operators, with the decays at the restarts replaced): both
    directions, an empty sequence, one seed per sequence."""
    a = rand(2, 7, low=-1.5, high=0.2, seed=13) if log_space else rand(2, 7, low=0.2, high=0.9, seed=13)
    b, init = rand(2, 7, seed=14), rand(2, 4, seed=15)
    offsets = torch.tensor([0, 3, 3, 5, 7])
    for reverse in (False, True):
        def fn(a, b, i):
            return ps.linear_recurrence(a, b, init=i, offsets=offsets, reverse=reverse, log_space=log_space,
                                        backend=backend)

        weights = rand(2, 7, seed=16).detach()
        plain = torch.autograd.grad((fn(a, b, init) * weights).sum(), (a, b, init))
        graphed = torch.autograd.grad((fn(a, b, init) * weights).sum(), (a, b, init), create_graph=True)
        for got, want in zip(graphed, plain):  # the differentiable formulas give the fused pass's gradients
            torch.testing.assert_close(got, want)
        assert gradgradcheck(fn, (a, b, init), fast_mode=backend == "triton")


@pytest.mark.parametrize("reverse", [False, True], ids=["fwd", "rev"])
def test_compiled_cpu_loop_gradients_match_the_loop(reverse):
    """3 x 3000 elements: the compiled forward and the compiled reverse recurrence of the
    backward, against autograd through the plain loop fed exp(a)."""
    la, b, init = rand(3, 3000, low=-0.2, high=0.01, seed=10), rand(3, 3000, seed=11), rand(3, seed=12)
    grad = torch.randn(3, 3000, generator=torch.Generator().manual_seed(13), dtype=F64)
    h = ps.linear_recurrence(la, b, init=init, reverse=reverse, log_space=True)
    got = torch.autograd.grad(h, (la, b, init), grad)
    want_h = loop(la, b, init, reverse)
    want = torch.autograd.grad(want_h, (la, b, init), grad)
    torch.testing.assert_close(h, want_h)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_16_bit_accumulates_in_float32(dtype):
    la = rand(4, 300, low=-0.3, high=0.0, seed=14, dtype=dtype)
    b = rand(4, 300, seed=15, dtype=dtype)
    h = ps.linear_recurrence(la, b, init=torch.ones(4, dtype=dtype), log_space=True)
    assert h.dtype == dtype
    l64, b64 = la.detach().double().requires_grad_(), b.detach().double().requires_grad_()
    want = loop(l64, b64, torch.ones(4, dtype=F64))
    torch.testing.assert_close(h.double(), want, rtol=1e-2, atol=2e-2)  # one rounding, not one per step
    ga, gb = torch.autograd.grad(h.float().sum(), (la, b))
    ea, eb = torch.autograd.grad(want.sum(), (l64, b64))
    assert ga.dtype == gb.dtype == dtype
    torch.testing.assert_close(gb.double(), eb, rtol=2e-2, atol=5e-2)
    torch.testing.assert_close(ga.double(), ea, rtol=2e-2, atol=0.5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_log_decay_of_minus_1000_gives_no_nan(backend):
    """exp(-1000) is 0: h is b, dL/db is dL/dh and dL/da is 0, all exactly, no NaN."""
    n = 9000 if backend == "cpu" else 21
    la = torch.full((2, n), -1000.0, dtype=F64, requires_grad=True)
    b, init = rand(2, n, seed=16), rand(2, seed=17)
    grad = torch.randn(2, n, generator=torch.Generator().manual_seed(18), dtype=F64)
    for reverse in (False, True):
        h = ps.linear_recurrence(la, b, init=init, reverse=reverse, log_space=True, backend=backend)
        torch.testing.assert_close(h, b, rtol=0, atol=0)
        ga, gb, gi = torch.autograd.grad(h, (la, b, init), grad)
        torch.testing.assert_close(gb, grad, rtol=0, atol=0)
        assert torch.equal(ga, torch.zeros_like(ga)) and torch.equal(gi, torch.zeros_like(gi))


def model(la, b, init):
    """Log-space recurrences inside a compiled function: a plain one with its final
    state, a packed one with a broadcast log decay, one of logsigmoid gates."""
    h, final = ps.linear_recurrence(la, b, init=init[:, 0], return_final=True, log_space=True)
    packed = ps.linear_recurrence(la[:, :1], b, offsets=torch.tensor([0, 2, 6]), init=init, log_space=True,
                                  reverse=True)
    gated = ps.linear_recurrence(torch.nn.functional.logsigmoid(b), b, axis=0, log_space=True)
    return (h * h).sum() + final.sum() + packed.sum() + gated.sum()


def test_compile_fullgraph_no_graph_break():
    g = torch.Generator().manual_seed(19)
    args = [(-torch.rand(3, 6, generator=g, dtype=F64)).requires_grad_(),
            torch.randn(3, 6, generator=g, dtype=F64).requires_grad_(),
            torch.randn(3, 2, generator=g, dtype=F64).requires_grad_()]
    torch._dynamo.reset()
    explanation = torch._dynamo.explain(model)(*args)
    assert explanation.graph_break_count == 0, explanation.break_reasons
    expected = model(*args)
    expected_grads = torch.autograd.grad(expected, args)
    compiled = torch.compile(model, fullgraph=True, backend="aot_eager")
    got = compiled(*args)
    torch.testing.assert_close(got, expected)
    for g_, e in zip(torch.autograd.grad(got, args), expected_grads):
        torch.testing.assert_close(g_, e)


def test_custom_operators_pass_opcheck():
    la, b, init = rand(3, 6, low=-2.0, high=0.3, seed=20), rand(3, 6, seed=21), rand(3, seed=22)
    torch.library.opcheck(torch.ops.prefixscan.linear_recurrence.default,
                          (la, b, init.detach().contiguous(), 1, True, None, False, "auto", True))


# ---------------------------------------------------------------------------
# GPU.

@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("layout", [((4, 2048, 256), 1), ((4, 256, 2048), 2), ((1, 4, 1 << 20), 2)],
                         ids=["BTC", "BCT", "long"])
def test_gpu_log_space_matches_linear_space_in_float64(dtype, layout):
    """The log-space kernels (walk and look-back) against the linear-space path fed
    exp(a) in float64, forward and backward (gradient to the log decays)."""
    shape, axis = layout
    gen = torch.Generator(device="cuda").manual_seed(23)
    la = (torch.rand(shape, device="cuda", generator=gen) * -0.1).to(dtype).requires_grad_()
    b = torch.randn(shape, device="cuda", generator=gen).to(dtype).requires_grad_()
    grad = torch.randn(shape, device="cuda", generator=gen).to(dtype)
    h = ps.linear_recurrence(la, b, axis=axis, log_space=True)
    ga, gb = torch.autograd.grad(h, (la, b), grad)
    l64, b64 = la.detach().double().requires_grad_(), b.detach().double().requires_grad_()
    want = ps.linear_recurrence(l64.exp(), b64, axis=axis)
    ea, eb = torch.autograd.grad(want, (l64, b64), grad.double())
    tol = 2e-2 if dtype == torch.bfloat16 else 1e-4
    torch.testing.assert_close(h.double(), want, rtol=tol, atol=tol)
    torch.testing.assert_close(gb.double(), eb, rtol=tol, atol=tol)
    torch.testing.assert_close(ga.double(), ea, rtol=tol, atol=tol * 10)
