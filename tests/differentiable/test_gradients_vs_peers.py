"""linear_recurrence's results and gradients against the peers a user would pick instead.

On the device only, where the peers are installed (the device script installs them from
wheels): accelerated-scan's Triton scan (``h[t] = gates[t] h[t-1] + tokens[t]`` along the
last axis of (B, C, T) tensors) and flash-linear-attention's HGRN (``h = exp(g) h + x``
from log gates, (B, T, D) tensors), both layouts of ours against theirs.  Gradients are
taken under the same random upstream gradient; every result is also checked against a
float64 reference (ours in float64), so a disagreement names the side that is wrong.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import prefixscan as ps  # noqa: E402

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="the peers run on a CUDA device")]


def _inputs(shape, seed, log_space):
    g = torch.Generator(device="cuda").manual_seed(seed)
    gate = torch.rand(shape, device="cuda", generator=g) * 0.5 + 0.5      # decays in (0.5, 1)
    if log_space:
        gate = gate.log()
    tokens = torch.randn(shape, device="cuda", generator=g)
    upstream = torch.randn(shape, device="cuda", generator=g)
    return gate, tokens, upstream


def _grads(fn, gate, tokens, upstream):
    gate, tokens = (t.detach().clone().requires_grad_() for t in (gate, tokens))
    h = fn(gate, tokens)
    h.backward(upstream)
    return h.detach(), gate.grad, tokens.grad


def _reference(gate, tokens, upstream, axis, log_space):
    """Ours in float64: the referee between the two float32 answers."""
    return _grads(lambda a, b: ps.linear_recurrence(a, b, axis=axis, log_space=log_space),
                  gate.double(), tokens.double(), upstream.double())


def _close(got, want, what):
    for name, g, w in zip(("h", "d gate", "d tokens"), got, want):
        torch.testing.assert_close(g.double(), w.double(), rtol=1e-3, atol=1e-3, msg=lambda m: f"{what} {name}: {m}")


@pytest.mark.parametrize("shape", [(2, 16, 1024), (1, 4, 4096)], ids=str)
def test_linear_against_accelerated_scan(shape):
    scan = pytest.importorskip("accelerated_scan.scalar").scan
    gate, tokens, upstream = _inputs(shape, seed=sum(shape), log_space=False)
    ref = _reference(gate, tokens, upstream, 2, False)
    theirs = _grads(scan, gate, tokens, upstream)
    _close(theirs, ref, "accelerated-scan")
    _close(_grads(lambda a, b: ps.linear_recurrence(a, b, axis=2), gate, tokens, upstream), ref, "(B, C, T)")
    # (B, T, C): the same numbers along axis 1
    btc = _grads(lambda a, b: ps.linear_recurrence(a, b, axis=1),
                 *(t.transpose(1, 2).contiguous() for t in (gate, tokens, upstream)))
    _close(tuple(t.transpose(1, 2) for t in btc), theirs, "(B, T, C) against accelerated-scan")


@pytest.mark.parametrize("shape", [(2, 1024, 64), (1, 4096, 32)], ids=str)
def test_log_space_against_flash_linear_attention(shape):
    pytest.importorskip("einops")
    chunk_hgrn = pytest.importorskip("fla.ops.hgrn").chunk_hgrn
    g, x, upstream = _inputs(shape, seed=sum(shape), log_space=True)
    ref = _reference(g, x, upstream, 1, True)
    # fla's signature is (x, g); ours (decays, tokens)
    theirs = _grads(lambda a, b: chunk_hgrn(b, a)[0], g, x, upstream)
    _close(theirs, ref, "chunk_hgrn")
    _close(_grads(lambda a, b: ps.linear_recurrence(a, b, axis=1, log_space=True), g, x, upstream), ref, "(B, T, D)")
    bdt = _grads(lambda a, b: ps.linear_recurrence(a, b, axis=2, log_space=True),
                 *(t.transpose(1, 2).contiguous() for t in (g, x, upstream)))
    _close(tuple(t.transpose(1, 2) for t in bdt), theirs, "(B, D, T) against chunk_hgrn")
