"""torch.compile of prefixscan.segmented_scan and of packed linear recurrences:
no graph break, the eager results, the offsets still checked, the sum's gradient.

Torch tensors under torch.compile (or requiring grad) run as the custom operator
``prefixscan::segmented_scan`` (prefixscan/primitives/segmented/torch_ops.py),
whose real implementation checks the segments' values (offsets starting at 0,
in range, non-decreasing) before the backend runs; a compiled packed
``linear_recurrence`` checks its offsets with ``prefixscan::checked_offsets``.
Results are compared with eager calls and with the plain-loop references of
prefixscan.testing, with the "eager" and "aot_eager" compile backends on the CPU
backend and in the Triton interpreter (``backend="triton"`` on CPU tensors).
Compiled functions are few and shared: each compilation costs seconds here.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import prefixscan as ps  # noqa: E402
from prefixscan.primitives.segmented import torch_ops as segmented_ops  # noqa: E402, F401  (the operators)
from prefixscan.testing import (  # noqa: E402
    poisoned,
    random_array,
    reference_linear_recurrence,
    reference_segmented_scan,
    segment_bounds,
)

CUDA = torch.cuda.is_available()
N = 37  # a prime: segments cross no tile boundary evenly


def forms_on(backend=None):
    """Every segment description and the arguments around it, in one function to compile."""

    def forms(x, offsets, flags, keys):
        return (ps.segmented_scan(x, offsets=offsets, backend=backend),
                ps.segmented_scan(x, "max", offsets=offsets, inclusive=False, reverse=True, init=-2.5,
                                  backend=backend),
                ps.segmented_scan(x, flags=flags, dtype=torch.float64, backend=backend),
                ps.segmented_scan(x, "mul", keys=keys, reverse=True, backend=backend),
                ps.segmented_scan(x, offsets=[0, 5, 5, 20], backend=backend),  # a list: checked when it runs
                ps.linear_recurrence(x.abs() / 4, x, offsets=offsets, backend=backend),  # no final n
                ps.linear_recurrence(x.abs() / 4, x, offsets=[0, 5, 5, 20], init=torch.ones(4, dtype=x.dtype, device=x.device),
                                     return_final=True, backend=backend))

    return forms


def data(rng, n=N, dtype=torch.float32):
    x = torch.from_numpy(random_array(rng, "float32", n, "add", exact=False)).to(dtype)
    inner = np.sort(rng.integers(0, n + 1, 4))
    offsets = torch.from_numpy(np.concatenate([[0], inner[:2], inner[1:2], inner[2:]])).to(torch.int32)  # one empty
    flags = torch.from_numpy(rng.random(n) < 0.25)
    keys = torch.from_numpy(rng.integers(0, 3, n)).to(torch.int16)
    return x, offsets, flags, keys


def expected(x, offsets, flags, keys):
    """The plain-loop references of every output of :func:`forms`."""
    xs, os, fs, ks = (t.numpy() for t in (x, offsets, flags, keys))
    a = np.abs(xs) / 4

    def packed(bounds, init=None):
        h = np.empty_like(xs)
        finals = []
        for i, (s, e) in enumerate(bounds):
            seed = 0.0 if init is None else init[i]
            if e > s:
                h[s:e] = reference_linear_recurrence(a[s:e], xs[s:e], init=seed)
            finals.append(h[e - 1] if e > s else seed)
        return h, np.array(finals, dtype=xs.dtype)

    listed = segment_bounds(xs.size, offsets=[0, 5, 5, 20])
    h_list, finals = packed(listed, np.ones(4, xs.dtype))
    return (reference_segmented_scan(xs, offsets=os),
            reference_segmented_scan(xs, "max", offsets=os, inclusive=False, reverse=True, init=-2.5),
            reference_segmented_scan(xs, flags=fs, dtype="float64"),
            reference_segmented_scan(xs, "mul", keys=ks, reverse=True),
            reference_segmented_scan(xs, offsets=[0, 5, 5, 20]),
            packed(segment_bounds(xs.size, offsets=os))[0],
            (h_list, finals))


def assert_matches(got, want):
    for g, w in zip(got, want):
        if isinstance(w, tuple):
            assert_matches(g, w)
        else:
            np.testing.assert_allclose(g.cpu().numpy(), w, rtol=1e-5, atol=1e-5)


def test_compiled_matches_eager_and_reference(rng, backend):
    """One test body on every backend: the CPU one, and the Triton kernels (in the interpreter here).
    fullgraph=True: a graph break fails the compilation."""
    name, device = ("cpu", "cpu") if backend.device is None else (backend.backend, backend.device)
    forms = forms_on(name)
    torch._dynamo.reset()
    compiled = torch.compile(forms, fullgraph=True, backend="eager")
    args = data(rng)
    on_device = [t.to(device) for t in args]
    got = compiled(*on_device)
    assert_matches(got, expected(*args))
    torch.testing.assert_close(got, forms(*on_device))  # the eager call, without the operators
    args = data(rng)  # new values, the same shapes: no recompilation, and the new offsets are read
    with torch._dynamo.config.patch(error_on_recompile=True):
        assert_matches(compiled(*(t.to(device) for t in args)), expected(*args))
        descending = torch.tensor([0, 9, 4, 20, 30, 30], dtype=torch.int32, device=device)  # offsets' shape
        with pytest.raises(ValueError, match=r"offsets must be non-decreasing: offsets\[2\] = 4"):
            compiled(on_device[0], descending, *on_device[2:])


@torch.compile(fullgraph=True, backend="eager", dynamic=False)
def scan_into(x, offsets, out):
    return ps.segmented_scan(x, offsets=offsets, out=out)


@torch.compile(fullgraph=True, backend="eager", dynamic=False)
def packed_recurrence(x, offsets):
    return ps.linear_recurrence(x, x, offsets=offsets)


@pytest.mark.parametrize("bad, message", [
    ([1, 3, 5, 9, 20], "offsets must start at 0, got 1"),
    ([0, 3, 5, 9, N + 1], rf"offsets\[4\] = {N + 1} is out of range"),
    ([0, 3, -5, 9, 20], r"offsets\[2\] = -5 is out of range"),
    ([0, 9, 5, 9, 20], r"offsets must be non-decreasing: offsets\[2\] = 5"),
])
def test_bad_offsets_raise_in_compiled_code(rng, bad, message):
    """The value checks run in the operator when the graph runs: the eager error, nothing written to out."""
    x = data(rng)[0]
    offsets = torch.tensor(bad, dtype=torch.int64)
    out = torch.from_numpy(poisoned(N, "float32"))
    with pytest.raises(ValueError, match=message):
        scan_into(x, offsets, out)
    assert torch.isnan(out).all()
    with pytest.raises(ValueError, match=message):
        packed_recurrence(x, offsets)
    with pytest.raises(ValueError, match=message):  # eager, through the operator (x requires grad)
        ps.segmented_scan(x.double().requires_grad_(), offsets=offsets)


def test_checks_that_read_no_value_run_while_tracing(rng):
    """Shapes and dtypes are refused by the fake implementations, with the eager messages."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    x = data(rng)[0]
    compiled = torch.compile(lambda x, t: ps.segmented_scan(x, offsets=t), fullgraph=True, backend="eager")
    with pytest.raises(Exception, match="offsets must be a 1-D array of integers"):
        compiled(x, torch.tensor([0.0, 3.0]))
    op = torch.ops.prefixscan.segmented_scan
    with FakeTensorMode():
        x, offsets = torch.empty(N), torch.empty(3, dtype=torch.int64)
        assert op(x, offsets, "offsets", "add", True, False, None, "float64", None).dtype == torch.float64
        with pytest.raises(ValueError, match="offsets must start at 0, got an empty"):
            op(x, offsets[:0], "offsets", "add", True, False, None, None, None)
        with pytest.raises(ValueError, match=rf"flags has shape \(5,\); expected \({N},\)"):
            op(x, torch.empty(5, dtype=torch.bool), "flags", "add", True, False, None, None, None)
        with pytest.raises(TypeError, match="keys must be bool, integer or real"):
            op(x, torch.empty(N, dtype=torch.complex64), "keys", "add", True, False, None, None, None)
        with pytest.raises(ValueError, match="offsets must start at 0, got an empty"):
            torch.ops.prefixscan.checked_offsets(offsets[:0], N, "len(x)", True)


def test_huge_unsigned_offsets_are_out_of_range(rng):
    """A uint64 value of 2**63 or more is out of range, never read as a negative int64 (the operator's check)."""
    x = data(rng, dtype=torch.float64)[0].requires_grad_()
    huge = torch.tensor([0, 2**63 + 5], dtype=torch.uint64)
    with pytest.raises(ValueError, match=r"offsets\[1\] = 9223372036854775813 is out of range"):
        ps.segmented_scan(x, offsets=huge)
    with pytest.raises(ValueError, match=r"offsets\[1\] = 9223372036854775813 is out of range"):
        torch.ops.prefixscan.checked_offsets(huge, N, "len(x)", False)


def test_packed_recurrence_needs_every_bound_only_for_shapes(rng):
    """Without init and return_final the number of sequences is no shape: n may be left out
    (:func:`test_compiled_matches_eager_and_reference`); with them, a tensor must end with n."""
    x, offsets = data(rng)[:2]
    a = x.abs() / 4
    final = torch.compile(lambda a, t: ps.linear_recurrence(a, a, offsets=t, return_final=True)[1],
                          fullgraph=True, backend="eager")
    short = offsets.clone()
    short[-1] = min(int(short[-1]), N - 1)
    with pytest.raises(ValueError, match=f"offsets must end with {N}"):
        final(a, short)
    whole = offsets.clone()
    whole[-1] = N  # the same shape: no recompilation
    torch.testing.assert_close(final(a, whole), ps.linear_recurrence(a, a, offsets=whole, return_final=True)[1])


def segmented_sum_by_torch(x, bounds, init, inclusive, reverse):
    """The segmented sum with torch's own operations (and autograd): cumsum per segment."""
    pieces = []
    for s, e in bounds:
        seg = x[s:e].flip(0) if reverse else x[s:e]
        running = torch.cumsum(seg, 0) + init
        if not inclusive:
            running = torch.cat([init.reshape(1).expand(min(1, e - s)), running[:-1]])
        pieces.append(running.flip(0) if reverse else running)
    return torch.cat(pieces)


@pytest.mark.parametrize("compile_backend", [None, "aot_eager"])
def test_sum_gradient_matches_torch(rng, compile_backend):
    x, offsets = (t for t in data(rng, dtype=torch.float64)[:2])
    x.requires_grad_()
    init = torch.tensor(0.75, dtype=torch.float64, requires_grad=True)
    weights = torch.from_numpy(rng.standard_normal((2, N)))
    bounds = segment_bounds(N, offsets=offsets.numpy())

    def loss(x, init, offsets):
        y1 = ps.segmented_scan(x, offsets=offsets, init=init)
        y2 = ps.segmented_scan(x, offsets=offsets, inclusive=False, reverse=True, init=init)
        return (y1 * weights[0]).sum() + (y2 * weights[1]).sum()

    run = loss if compile_backend is None else torch.compile(loss, fullgraph=True, backend=compile_backend)
    got = torch.autograd.grad(run(x, init, offsets), (x, init))
    want = torch.autograd.grad((segmented_sum_by_torch(x, bounds, init, True, False) * weights[0]).sum()
                               + (segmented_sum_by_torch(x, bounds, init, False, True) * weights[1]).sum(), (x, init))
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)


@pytest.mark.parametrize("n", [0, 1, 8193])
def test_gradcheck_across_sizes(rng, n):
    """float64 gradcheck of the operator's backward by flags and keys (8193: the compiled CPU path)."""
    x = torch.from_numpy(rng.standard_normal(n)).requires_grad_()
    flags = torch.from_numpy(rng.random(n) < 0.1)
    keys = torch.from_numpy(rng.integers(0, 2, n))
    if n > 64:  # gradcheck's Jacobian is n x n: check one random direction instead
        grad = torch.from_numpy(rng.standard_normal(n))
        (got,) = torch.autograd.grad(ps.segmented_scan(x, flags=flags, reverse=True), x, grad)
        bounds = segment_bounds(n, flags=flags.numpy())
        np.testing.assert_allclose(got.numpy(), reference_segmented_scan(grad.numpy(), flags=flags.numpy()))
        assert len(bounds) > 1
        return
    assert torch.autograd.gradcheck(lambda x: ps.segmented_scan(x, flags=flags, inclusive=False), (x,))
    assert torch.autograd.gradcheck(lambda x: ps.segmented_scan(x, keys=keys, reverse=True), (x,))


def test_only_the_sum_has_a_gradient(rng):
    x = data(rng, dtype=torch.float64)[0].requires_grad_()
    with pytest.raises(TypeError, match="op='max' has no gradient in segmented_scan"):
        ps.segmented_scan(x, "max", offsets=[0, 4])
    y = ps.segmented_scan(x.detach(), "max", offsets=[0, 4])  # detached: no gradient asked for
    np.testing.assert_allclose(y.numpy(), reference_segmented_scan(x.detach().numpy(), "max", offsets=[0, 4]))
    with torch.no_grad():
        assert not ps.segmented_scan(x, "min", offsets=[0, 4]).requires_grad


def test_custom_operators_pass_opcheck(rng):
    """Schema, fake implementation and autograd registration agree with the real one."""
    x, offsets, flags, keys = data(rng, dtype=torch.float64)
    x.requires_grad_()
    init = torch.tensor(1.5, dtype=torch.float64, requires_grad=True)
    op = torch.ops.prefixscan.segmented_scan.default
    torch.library.opcheck(op, (x, offsets, "offsets", "add", False, True, init, None, None))
    torch.library.opcheck(op, (x, flags, "flags", "add", True, False, None, "float64", "cpu"))
    torch.library.opcheck(op, (x.detach(), keys, "keys", "max", True, True, None, None, None))
    whole = torch.cat([offsets, torch.tensor([N], dtype=offsets.dtype)])
    torch.library.opcheck(torch.ops.prefixscan.checked_offsets.default, (whole, N, "len(x)", True))


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("compile_backend", ["aot_eager", "inductor"])
def test_gpu_compiled_matches_eager(rng, compile_backend):
    torch._dynamo.reset()
    args = [t.cuda() for t in data(rng, 100_003)]
    forms = forms_on()
    got = torch.compile(forms, fullgraph=True, backend=compile_backend)(*args)
    torch.testing.assert_close(got, forms(*args), rtol=1e-4, atol=1e-3)
