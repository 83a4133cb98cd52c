"""torch.compile of prefixscan calls: no graph break, the same forward and backward.

The scans and linear recurrences of torch tensors run as the custom operators
``prefixscan::scan`` and ``prefixscan::linear_recurrence`` (fake
implementations for tracing, autograd registered), so
``torch.compile(fullgraph=True)`` compiles a function that calls
``prefixscan.cumsum``, ``prefixscan.scan`` with a built-in operator, a
``make_scan`` object and ``prefixscan.linear_recurrence`` into one graph.  On
the CPU the "eager" and "aot_eager" compile backends run without a GPU
compiler; the GPU-marked test uses inductor on CUDA tensors.

The tests call the public functions, which route such tensors to the custom
operators (the ``torch_ops`` modules of prefixscan.primitives).
"""

from __future__ import annotations


import numpy as np
import pytest

torch = pytest.importorskip("torch")

import prefixscan as ps  # noqa: E402
# Registers prefixscan::scan and the recurrence operators (it imports the scan's).
from prefixscan.primitives.recurrence import torch_ops  # noqa: E402, F401

CUDA = torch.cuda.is_available()
F64 = torch.float64




scan = ps.scan  # the public API: torch.compile must trace it without a graph break
cumsum = ps.cumsum
cummax = ps.cummax
linear_recurrence = ps.linear_recurrence
make_scan = ps.make_scan


running_max = make_scan("max", axis=1)


def model(x, a, b, init):
    """Every differentiable entry point at once."""
    y = cumsum(x, axis=1) + scan(x, "logaddexp", axis=1, reverse=True) + running_max(x)
    y = y + scan(x, "mul", axis=1, inclusive=False, init=init[:, :1].squeeze(1), tuple_size=1)
    y = y + scan(x, "add", axis=1, init=2.0, dtype="float64")  # a Python seed, a dtype name
    y = y + cummax(x, axis=0, exclusive=True)  # first row: -inf, replaced below
    y = torch.where(torch.isfinite(y), y, torch.zeros_like(y))
    h, final = linear_recurrence(a, b, init=init[:, 0], return_final=True)
    packed = linear_recurrence(a[:, :1], b, offsets=torch.tensor([0, 2, 6]), init=init)  # a broadcasts
    average = linear_recurrence(0.5, b, axis=0)  # one decay for every step and lane
    return (y * y).sum() + (h * h).sum() + final.sum() + packed.sum() + average.sum()


def inputs():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 6, generator=g, dtype=F64)
    a = 0.2 + 0.7 * torch.rand(3, 6, generator=g, dtype=F64)
    b = torch.randn(3, 6, generator=g, dtype=F64)
    init = torch.randn(3, 2, generator=g, dtype=F64)
    return [t.requires_grad_() for t in (x, a, b, init)]


def test_no_graph_break():
    torch._dynamo.reset()
    explanation = torch._dynamo.explain(model)(*inputs())
    assert explanation.graph_break_count == 0, explanation.break_reasons
    assert explanation.graph_count == 1


@pytest.mark.parametrize("compile_backend", ["eager", "aot_eager"])
def test_compiled_forward_and_backward_match_eager(compile_backend):
    torch._dynamo.reset()
    args = inputs()
    expected = model(*args)
    expected_grads = torch.autograd.grad(expected, args)
    compiled = torch.compile(model, fullgraph=True, backend=compile_backend)
    got = compiled(*args)
    torch.testing.assert_close(got, expected)
    for g, e in zip(torch.autograd.grad(got, args), expected_grads):
        torch.testing.assert_close(g, e)


def test_compiled_inference():
    torch._dynamo.reset()
    args = inputs()
    with torch.no_grad():
        expected = model(*args)
        got = torch.compile(model, fullgraph=True, backend="aot_eager")(*args)
    torch.testing.assert_close(got, expected)


def test_integer_scans_compile():
    torch._dynamo.reset()

    def counts(mask):
        return cumsum(mask, axis=0), scan(mask.to(torch.int32), "max", axis=0)

    mask = torch.tensor([True, False, True, True])
    total, running = torch.compile(counts, fullgraph=True, backend="aot_eager")(mask)
    assert total.dtype == torch.int64 and total.tolist() == [1, 1, 2, 3]  # NumPy's rule: bool sums as int64
    assert running.tolist() == [1, 1, 1, 1]


def test_no_recompile_after_unrelated_scans():
    torch._dynamo.reset()
    compiled = torch.compile(lambda x: scan(x, "max", axis=1).sum(), fullgraph=True, backend="eager")
    x = inputs()[0]
    compiled(x)
    ps.scan(np.arange(5), "add", axis=0)  # other scans fill the process-wide caches
    ps.make_scan("min")(np.arange(3.0))
    with torch._dynamo.config.patch(error_on_recompile=True):
        compiled(x)


def test_user_monoid_under_compile_is_refused_clearly():
    torch._dynamo.reset()
    saturating = ps.Monoid(lambda a, b: ps.minimum(a + b, 10.0), 0.0, name="saturating_add")
    compiled = torch.compile(lambda x: scan(x, saturating, axis=0), fullgraph=True, backend="eager")
    with pytest.raises(Exception, match="custom operator"):
        compiled(torch.arange(4.0))


def _affine_inputs():
    g = torch.Generator().manual_seed(5)
    return 0.5 + 0.5 * torch.rand(6, generator=g, dtype=F64), torch.randn(6, generator=g, dtype=F64)


def _scan_affine_into(a, b, out):
    return scan((a, b), ps.AFFINE, axis=0, out=out)


@pytest.mark.parametrize("fullgraph", [True, False])
def test_out_fields_sharing_memory_are_refused_under_compile(fullgraph):
    """scan's checks of ``out`` hold while torch.compile traces: fields that share memory
    are refused (the traced path once wrote both results into one tensor), whole
    (fullgraph) or after a graph break; separate tensors take the results as in eager."""
    torch._dynamo.reset()
    a, b = _affine_inputs()
    compiled = torch.compile(_scan_affine_into, fullgraph=fullgraph, backend="eager")
    shared = torch.full((6,), 7.0, dtype=F64)
    for out in ((shared, shared), (shared, shared[:])):
        with pytest.raises(Exception, match="share memory"):
            compiled(a, b, out)
        assert bool((shared == 7.0).all()), "out was written by a refused call"
    expected = ps.scan((a, b), ps.AFFINE, axis=0)
    out = (torch.full((6,), 7.0, dtype=F64), torch.full((6,), 7.0, dtype=F64))
    got = compiled(a, b, out)
    assert got[0] is out[0] and got[1] is out[1]
    for g, e in zip(out, expected):
        torch.testing.assert_close(g, e)


def test_out_of_another_kind_or_shape_is_refused_under_compile():
    torch._dynamo.reset()
    x = inputs()[0].detach()
    compiled = torch.compile(lambda x, out: cumsum(x, axis=1, out=out), fullgraph=True, backend="eager")
    for out, match in ((torch.empty(3, 5, dtype=F64), "shape"), (torch.empty(3, 6, dtype=torch.int64), "same_kind"),
                       (torch.empty(1, 6, dtype=F64).expand(3, 6), "internal overlap")):
        with pytest.raises(Exception, match=match):
            compiled(x, out)


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_out_on_another_device_is_refused_under_compile():
    """A host ``out`` for a CUDA x is refused as in eager (the traced path once copied the
    result to the host)."""
    torch._dynamo.reset()
    x = inputs()[0].detach().cuda()
    compiled = torch.compile(lambda x, out: cumsum(x, axis=1, out=out), fullgraph=True, backend="eager")
    out = torch.full((3, 6), 7.0, dtype=F64)
    with pytest.raises(Exception, match="out is on cpu but x is on cuda"):
        compiled(x, out)
    assert bool((out == 7.0).all())


def test_custom_operators_pass_opcheck():
    """Schema, fake implementation and autograd registration agree with the real one."""
    x, a, b, init = (t.detach().requires_grad_() for t in inputs())
    torch.library.opcheck(torch.ops.prefixscan.scan.default,
                          (x, init[:, 0].contiguous(), "mul", 1, False, True, 2, 1, None, "cpu", "auto", False,
                           "auto"))
    torch.library.opcheck(torch.ops.prefixscan.scan.default,
                          (x, None, "max", 0, True, False, 1, 3, "float64", None, "auto", False, "auto"))
    torch.library.opcheck(torch.ops.prefixscan.linear_recurrence.default,
                          (a, b, init[:, 0].contiguous(), 1, True, None, False, "auto"))
    restart = torch.zeros(a.shape[1], dtype=torch.uint8)
    restart[[0, a.shape[1] // 2]] = 1  # packed sequences: restart flags beside a
    for log_space in (False, True):
        torch.library.opcheck(torch.ops.prefixscan.linear_recurrence.default,
                              (-a if log_space else a, b, None, 1, False, None, False, "auto", log_space, restart))
        torch.library.opcheck(torch.ops.prefixscan.linear_recurrence_backward.default,
                              (a.detach(), b.detach(), b.detach(), None, 1, False, None, False, "auto", log_space,
                               True, restart))


def test_fake_tensors_give_shape_and_dtype():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(4, 7, dtype=torch.int32)
        y = torch.ops.prefixscan.scan(x, None, "add", 1, True, False, 1, 1, "int64", None, "auto", False, "auto")
        h = torch.ops.prefixscan.linear_recurrence(torch.empty(2, 9), torch.empty(2, 9), None, 1, False, None,
                                                   False, "auto")
    assert y.shape == (4, 7) and y.dtype == torch.int64
    assert h.shape == (2, 9) and h.dtype == torch.float32


# Inductor on CUDA (torch 2.11) once rejected this graph: its decomposition of index_fill
# (the packed recurrence's reset of the decay at each sequence start, on an expanded decay)
# wrote into a fresh buffer with copy_, which AOTAutograd refuses; the reset is a mask and
# a where now.
@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("compile_backend", ["aot_eager", "inductor"])
def test_gpu_compiled_matches_eager(compile_backend):
    torch._dynamo.reset()
    args = [t.detach().cuda().float().requires_grad_() for t in inputs()]
    expected = model(*args)
    expected_grads = torch.autograd.grad(expected, args)
    explanation = torch._dynamo.explain(model)(*args)
    assert explanation.graph_break_count == 0, explanation.break_reasons
    compiled = torch.compile(model, fullgraph=True, backend=compile_backend)
    got = compiled(*args)
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-3)
    for g, e in zip(torch.autograd.grad(got, args), expected_grads):
        torch.testing.assert_close(g, e, rtol=1e-4, atol=1e-3)
