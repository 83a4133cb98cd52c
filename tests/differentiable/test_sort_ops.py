"""prefixscan.sort and prefixscan.argsort of torch tensors as the custom operators
``prefixscan::sort`` and ``prefixscan::argsort`` (prefixscan/primitives/sort/torch_ops.py):
the operators' checks (``torch.library.opcheck``), ``torch.compile`` without a graph
break, and the gradient of sorted float keys and of moved values scattered back
to the places they were read from, against torch.sort's own backward."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import prefixscan as ps  # noqa: E402
from prefixscan.primitives.sort import torch_ops as sort_ops  # noqa: E402


def test_operators_pass_opcheck(rng):
    x = torch.from_numpy(rng.standard_normal((3, 7)))
    v = torch.from_numpy(rng.integers(0, 9, (3, 7)))
    torch.library.opcheck(sort_ops.sort_op, (x, [v, x.clone()], 0, True, None, "cpu"))
    torch.library.opcheck(sort_ops.argsort_op, (v, None, False, 4, "cpu"))


def model(x, v):
    keys, moved = ps.sort(x, values=v, descending=True)
    return keys * 2 + moved, ps.argsort(x, axis=0)


def test_compiled_without_a_graph_break(rng):
    torch._dynamo.reset()
    x = torch.from_numpy(rng.integers(-5, 5, (4, 9)).astype(np.float32))
    v = torch.from_numpy(rng.standard_normal((4, 9)).astype(np.float32))
    explanation = torch._dynamo.explain(model)(x, v)
    assert explanation.graph_break_count == 0, explanation.break_reasons
    got = torch.compile(model, fullgraph=True, backend="aot_eager")(x, v)
    expected = torch.sort(x, descending=True, stable=True)
    torch.testing.assert_close(got[0], expected.values * 2 + torch.take_along_dim(v, expected.indices, 1))
    assert torch.equal(got[1], torch.sort(x, dim=0, stable=True).indices)


@pytest.mark.parametrize("axis", [0, None])
def test_gradient_goes_back_to_where_each_element_was_read(rng, axis):
    """Keys and a values array both requiring grad, along an axis and flattened; an
    integer key's values get their gradient too."""
    x = torch.from_numpy(rng.integers(-3, 3, (3, 5)).astype(np.float64)).requires_grad_()
    v = torch.from_numpy(rng.standard_normal((3, 5))).requires_grad_()
    weights = torch.from_numpy(rng.standard_normal(15))
    keys, moved = ps.sort(x, values=v, axis=axis)
    loss = ((keys.reshape(-1) * weights).sum() + (moved.reshape(-1) ** 2 * weights).sum())
    got = torch.autograd.grad(loss, (x, v))
    flat = (lambda t: t.reshape(-1)) if axis is None else (lambda t: t)
    order = torch.sort(flat(x), dim=0, stable=True).indices
    expected_keys = torch.take_along_dim(flat(x), order, 0)
    expected_moved = torch.take_along_dim(flat(v), order, 0)
    loss = ((expected_keys.reshape(-1) * weights).sum() + (expected_moved.reshape(-1) ** 2 * weights).sum())
    for g, e in zip(got, torch.autograd.grad(loss, (x, v))):
        torch.testing.assert_close(g, e)
    ints = torch.from_numpy(rng.integers(0, 4, 15))
    keys, moved = ps.sort(ints, values=v.reshape(-1))
    assert not keys.requires_grad and moved.requires_grad
    (g,) = torch.autograd.grad((moved * weights).sum(), v)
    expected = torch.zeros(15, dtype=v.dtype).index_put_((torch.sort(ints, stable=True).indices,), weights)
    torch.testing.assert_close(g.reshape(-1), expected)
