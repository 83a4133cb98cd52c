"""linear_recurrence's eager gradient (an autograd.Function around the operator's own
functions) against the operator ``prefixscan::linear_recurrence`` called directly: the
same values and gradients, and eager calls never enter the operator."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import prefixscan as ps  # noqa: E402
from prefixscan.primitives.recurrence import torch_ops  # noqa: E402

F64 = torch.float64


def _inputs(seed, log_space):
    g = torch.Generator().manual_seed(seed)
    a = torch.rand(3, 17, 5, generator=g, dtype=F64) * 0.5 + 0.5
    if log_space:
        a = a.log()
    b = torch.randn(3, 17, 5, generator=g, dtype=F64)
    init = torch.randn(3, 5, generator=g, dtype=F64)
    up = torch.randn(3, 17, 5, generator=g, dtype=F64)
    return a, b, init, up


def _grads(fn, a, b, init, up):
    a, b, init = (t.clone().requires_grad_() for t in (a, b, init))
    h = fn(a, b, init)
    h.backward(up)
    return h.detach(), a.grad, b.grad, init.grad


@pytest.mark.parametrize("log_space", [False, True], ids=["linear", "log"])
@pytest.mark.parametrize("reverse", [False, True], ids=["fwd", "rev"])
def test_eager_gradient_equals_the_operators(log_space, reverse):
    a, b, init, up = _inputs(7, log_space)
    params = torch_ops.RecurrenceParams(1, reverse, "cpu", log_space=log_space)
    eager = _grads(lambda x, y, i: ps.linear_recurrence(x, y, init=i, axis=1, reverse=reverse, log_space=log_space,
                                                        backend="cpu"), a, b, init, up)
    op = _grads(lambda x, y, i: torch_ops.recurrence_op(x, y, i, *params.args()), a, b, init, up)
    for got, want, name in zip(eager, op, ("h", "grad a", "grad b", "grad init")):
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12, msg=name)


@pytest.mark.parametrize("log_space", [False, True], ids=["linear", "log"])
@pytest.mark.parametrize("reverse", [False, True], ids=["fwd", "rev"])
def test_backward_takes_an_adjoint_from_after_the_end(log_space, reverse):
    """``backward_values(..., final=m)`` (what prefixscan.distributed runs on each rank's
    slice, ``m`` the adjoint arriving from the later ranks) on the CPU's reverse
    recurrence: the gradients of the slice with ``m`` added to dL/dh at its last step
    (its first, in reverse), against autograd through a plain float64 loop."""
    a, b, init, up = _inputs(11, log_space)
    final = torch.randn(3, 5, generator=torch.Generator().manual_seed(5), dtype=F64)
    params = torch_ops.RecurrenceParams(1, reverse, "cpu", log_space=log_space)
    h = torch_ops.recurrence_values(params, a, b, init)
    grad_a, grad_b = torch_ops.backward_values(params, a, h, up, init, True, final=final)
    joined = up.clone()
    joined[:, 0 if reverse else -1] += final
    wa, wb = a.clone().requires_grad_(), b.clone().requires_grad_()
    state, steps = init, [None] * a.shape[1]
    for t in (range(a.shape[1] - 1, -1, -1) if reverse else range(a.shape[1])):
        state = (wa[:, t].exp() if log_space else wa[:, t]) * state + wb[:, t]
        steps[t] = state
    want_a, want_b = torch.autograd.grad(torch.stack(steps, 1), (wa, wb), joined)
    torch.testing.assert_close(grad_b, want_b, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(grad_a, want_a, rtol=1e-12, atol=1e-12)


def test_eager_calls_do_not_enter_the_operator(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the eager path entered prefixscan::linear_recurrence")

    a, b, init, up = _inputs(3, False)
    want = _grads(lambda x, y, i: ps.linear_recurrence(x, y, init=i, axis=1, backend="cpu"), a, b, init, up)
    monkeypatch.setattr(torch_ops, "recurrence_op", refuse)
    backward, modes = torch_ops.recurrence_backward, []

    def recording(*args, eager=False, **kwargs):  # the gradient's body, called directly
        modes.append(eager)
        return backward(*args, eager=eager, **kwargs)

    monkeypatch.setattr(torch_ops, "recurrence_backward", recording)
    got = _grads(lambda x, y, i: ps.linear_recurrence(x, y, init=i, axis=1, backend="cpu"), a, b, init, up)
    assert modes == [True]
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=0, atol=0)
    # second derivatives still flow (create_graph runs the differentiable formulas)
    a2, b2 = a.clone().requires_grad_(), b.clone().requires_grad_()
    h = ps.linear_recurrence(a2, b2, axis=1, backend="cpu")
    (ga,) = torch.autograd.grad((h * up).sum(), a2, create_graph=True)
    ga.sum().backward()
    assert b2.grad is not None and torch.isfinite(b2.grad).all()


def test_recorders_and_transforms_still_get_the_operator():
    """vmap, make_fx and jit tracing keep one operator node, as before the eager path."""
    decay = (torch.rand(3, dtype=F64) * 0.5 + 0.5).requires_grad_()
    x = torch.randn(4, 6, 3, dtype=F64)
    h = torch.vmap(lambda xb: ps.linear_recurrence(decay.expand(6, 3), xb, axis=0, backend="cpu"))(x)
    want = torch.stack([ps.linear_recurrence(decay.expand(6, 3), xb, axis=0, backend="cpu") for xb in x])
    torch.testing.assert_close(h, want)
    h.sum().backward()
    assert decay.grad is not None

    from torch.fx.experimental.proxy_tensor import make_fx

    param = torch.nn.Parameter(torch.rand(6, 3, dtype=F64) * 0.5 + 0.5)
    gm = make_fx(lambda b: ps.linear_recurrence(param, b, axis=0, backend="cpu"), tracing_mode="real")(x[0])
    assert any("linear_recurrence" in str(n.target) for n in gm.graph.nodes)
    torch.testing.assert_close(gm(x[1]), ps.linear_recurrence(param, x[1], axis=0, backend="cpu"))
