"""torch.compile of prefixscan.compact and prefixscan.partition: no graph break,
the eager results, and the gradient scattered back to the positions read.

Torch tensors under torch.compile (or requiring grad) run as the custom
operators ``prefixscan::compact`` and ``prefixscan::partition``
(prefixscan/primitives/compaction/torch_ops.py), checked here against the
plain-loop references of prefixscan.testing, on the CPU with the "eager" and
"aot_eager" compile backends (the Triton interpreter with ``backend="triton"``),
and with inductor on CUDA tensors in the GPU-marked test.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import torch._dynamo.testing  # noqa: E402  (CompileCounterWithBackend; not loaded by torch.compile itself)

import prefixscan as ps  # noqa: E402
# Registers prefixscan::compact and prefixscan::partition.
from prefixscan.primitives.compaction import torch_ops as compaction_ops  # noqa: E402, F401
from prefixscan.testing import reference_compact, reference_partition  # noqa: E402

CUDA = torch.cuda.is_available()
SIZE = 6
FILL = -7.5


def model(x, mask, y):
    """Every form at once: a sized compaction of two fields, a partition, and arithmetic after them."""
    (values, labels), count = ps.compact((x, y), mask, size=SIZE, fill_value=FILL)
    parted, parted_count = ps.partition(x, mask)
    return values * 2 + labels, count, parted.cumsum(0), parted_count


def data(rng, shape=(3, 7), dtype=torch.float64):
    x = torch.from_numpy(rng.standard_normal(shape)).to(dtype)
    mask = torch.from_numpy(rng.random(shape) < 0.4)
    y = torch.from_numpy(rng.integers(-50, 50, shape)).to(dtype)
    return x, mask, y


def check_against_reference(result, x, mask, y):
    values, count, parted_sum, parted_count = result
    xs, ms, ys = x.detach().numpy(), mask.numpy(), y.detach().numpy()
    kept = reference_compact(xs, ms)
    expected = np.full(SIZE, FILL)
    expected[:min(SIZE, kept.size)] = (kept * 2 + reference_compact(ys, ms))[:SIZE]
    expected[kept.size:] = FILL * 2 + FILL
    np.testing.assert_allclose(values.detach().numpy(), expected)
    parted, expected_count = reference_partition(xs, ms)
    np.testing.assert_allclose(parted_sum.detach().numpy(), np.cumsum(parted, dtype=np.float64), rtol=1e-4, atol=1e-3)
    for c in (count, parted_count):
        assert c.shape == () and c.dtype == torch.int64 and int(c) == expected_count


def test_no_graph_break(rng):
    torch._dynamo.reset()
    explanation = torch._dynamo.explain(model)(*data(rng))
    assert explanation.graph_break_count == 0, explanation.break_reasons
    assert explanation.graph_count == 1


@pytest.mark.parametrize("compile_backend", ["eager", "aot_eager"])
def test_compiled_matches_eager_and_reference(rng, compile_backend):
    torch._dynamo.reset()
    args = data(rng)
    counter = torch._dynamo.testing.CompileCounterWithBackend(compile_backend)
    compiled = torch.compile(model, fullgraph=True, backend=counter)
    got = compiled(*args)
    check_against_reference(got, *args)
    for g, e in zip(got, model(*args)):
        torch.testing.assert_close(g, e)
    assert counter.frame_count == 1


@pytest.mark.parametrize("n", [0, 1, 17])
def test_compact_without_size_has_a_data_dependent_length(rng, n):
    """No size: the fake gives an unbacked symbolic length, the real call the count's."""
    torch._dynamo.reset()
    x, mask, _ = data(rng, (n,))
    compiled = torch.compile(lambda x, m: ps.compact(x, m) * 3, fullgraph=True, backend="aot_eager")
    np.testing.assert_allclose(compiled(x, mask).numpy(), reference_compact(x.numpy(), mask.numpy()) * 3)


def test_triton_backend_in_compiled_function(rng):
    torch._dynamo.reset()
    x, mask, _ = data(rng, (37,), torch.float32)
    compiled = torch.compile(lambda x, m: ps.partition(x, m, backend="triton"), fullgraph=True, backend="eager")
    values, count = compiled(x, mask)
    expected, expected_count = reference_partition(x.numpy(), mask.numpy())
    np.testing.assert_array_equal(values.numpy(), expected)
    assert int(count) == expected_count


def expected_gradients(x, mask, y, weights):
    """The gradients of the sum of ``weights`` times each output, by torch's own boolean indexing."""
    x2, y2 = x.detach().clone().requires_grad_(), y.detach().clone().requires_grad_()
    kept = torch.cat((x2[mask], x2.new_full((SIZE,), FILL)))[:SIZE]
    labels = torch.cat((y2[mask], y2.new_full((SIZE,), FILL)))[:SIZE]
    parted = torch.cat((x2[mask], x2[~mask]))
    loss = ((kept * 2 + labels) * weights[0]).sum() + (parted.cumsum(0) * weights[1]).sum()
    return torch.autograd.grad(loss, (x2, y2))


@pytest.mark.parametrize("compile_backend", [None, "aot_eager"])
def test_gradient_goes_back_to_the_kept_positions(rng, compile_backend):
    torch._dynamo.reset()
    x, mask, y = (t.requires_grad_() if t.is_floating_point() else t for t in data(rng, (4, 9)))
    mask[0, :2] = True  # more kept elements than SIZE: the ones past it get no gradient
    mask[1] = True
    weights = (torch.from_numpy(rng.standard_normal(SIZE)), torch.from_numpy(rng.standard_normal(x.numel())))
    run = model if compile_backend is None else torch.compile(model, fullgraph=True, backend=compile_backend)
    values, _, parted_sum, _ = run(x, mask, y)
    loss = (values * weights[0]).sum() + (parted_sum * weights[1]).sum()
    for g, e in zip(torch.autograd.grad(loss, (x, y)), expected_gradients(x, mask, y, weights)):
        torch.testing.assert_close(g, e)


def test_gradient_of_compact_without_size(rng):
    torch._dynamo.reset()
    x = torch.from_numpy(rng.standard_normal(23)).requires_grad_()
    mask = torch.from_numpy(rng.random(23) < 0.5)
    compiled = torch.compile(lambda x, m: (ps.compact(x, m) ** 2).sum(), fullgraph=True, backend="aot_eager")
    (grad,) = torch.autograd.grad(compiled(x, mask), (x,))
    torch.testing.assert_close(grad, torch.where(mask, 2 * x.detach(), 0.0))


def test_default_fill_is_each_fields_zero_under_compile(rng):
    """Without ``fill_value`` the custom operator fills with each field's zero: ``False``
    for bool fields (a default 0 was once refused for them), 0 for the others."""
    torch._dynamo.reset()
    mask = torch.from_numpy(rng.random(9) < 0.5)
    kept = int(mask.sum())
    flags = torch.from_numpy(rng.random(9) < 0.5)
    x = torch.from_numpy(rng.standard_normal(9))
    compiled = torch.compile(lambda f, x, m: ps.compact((f, x), m, size=12), fullgraph=True, backend="eager")
    (got_flags, got_x), count = compiled(flags, x, mask)
    assert int(count) == kept and got_flags.dtype == torch.bool
    assert torch.equal(got_flags[:kept], flags[mask]) and not got_flags[kept:].any()
    assert torch.equal(got_x[:kept], x[mask]) and torch.equal(got_x[kept:], torch.zeros(12 - kept, dtype=x.dtype))


def test_custom_operators_pass_opcheck(rng):
    """Schema, fake implementation and autograd registration agree with the real one."""
    x, mask, y = data(rng)
    x.requires_grad_()
    torch.library.opcheck(torch.ops.prefixscan.compact.default, ([x, y], mask, SIZE, FILL, 0.0, None))
    torch.library.opcheck(torch.ops.prefixscan.compact.default, ([x], mask, None, 0, 0.0, None))
    torch.library.opcheck(torch.ops.prefixscan.compact.default,
                          ([torch.from_numpy(rng.integers(0, 9, 11))], mask.reshape(-1)[:11], 3, 4, 0.0, "cpu"))
    torch.library.opcheck(torch.ops.prefixscan.partition.default, ([x, y], mask, None))


def test_fake_tensors_give_shapes():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x, mask = torch.empty(4, 5, dtype=torch.int16), torch.empty(4, 5, dtype=torch.bool)
        values, count = torch.ops.prefixscan.compact([x], mask, 3, 1, 0.0, None)
        parted, parted_count = torch.ops.prefixscan.partition([x], mask, None)
    assert values.shape == (3,) and values.dtype == torch.int16
    assert parted.shape == (20,) and parted.dtype == torch.int16
    assert count.shape == parted_count.shape == () and count.dtype == parted_count.dtype == torch.int64


def test_bad_arguments_are_refused_before_any_work(rng):
    x, mask, _ = data(rng)
    x.requires_grad_()
    with pytest.raises(ValueError, match="mask has shape"):
        ps.compact(x, mask[:, :3], size=2)
    with pytest.raises(TypeError, match="mask must be a bool"):
        ps.partition(x, mask.to(torch.int8))
    with pytest.raises(ValueError, match="size must be >= 0"):
        ps.compact(x, mask, size=-1)
    with pytest.raises(TypeError, match="fill_value must be a number"):
        ps.compact(x, mask, size=2, fill_value="zero")
    torch._dynamo.reset()
    compiled = torch.compile(lambda x, m: ps.compact(x, m, size=3), fullgraph=True, backend="eager")
    with pytest.raises(Exception, match="mask must be a bool"):  # raised by the fake, while tracing
        compiled(x.detach(), mask.to(torch.int8))


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("compile_backend", ["aot_eager", "inductor"])
def test_gpu_compiled_matches_eager(rng, compile_backend):
    torch._dynamo.reset()
    args = [t.cuda() for t in data(rng, (129, 1025), torch.float32)]
    explanation = torch._dynamo.explain(model)(*args)
    assert explanation.graph_break_count == 0, explanation.break_reasons
    got = torch.compile(model, fullgraph=True, backend=compile_backend)(*args)
    check_against_reference([t.cpu() for t in got], *(t.cpu() for t in args))
    values, count, parted_sum, parted_count = got
    eager = model(*args)
    for g, e in ((values, eager[0]), (count, eager[1]), (parted_count, eager[3])):
        torch.testing.assert_close(g, e)
    # inductor's float32 cumsum of 132225 partitioned values sums in another order than eager's
    torch.testing.assert_close(parted_sum, eager[2], rtol=1e-4, atol=1e-3)
