"""Packed sequences with offsets on the host (prefixscan/primitives/recurrence/packing.py).

A list, tuple or NumPy array of offsets is turned into the restart flags and positions in
NumPy and sent to the device in one copy; offsets given as a tensor keep the torch
operations where they live.  Both ways must give the same bits: the packing's arrays,
and h, the final states and every gradient (forward and reverse, seeds, final states,
log decays, both layouts, lengths 0, 1 and a prime, empty sequences anywhere, the last
bound given or left out, offsets as a list, a tuple and NumPy arrays of int32, int64 and
big-endian uint64).  The results are also checked against the plain-loop reference run on
each sequence alone.  On a CUDA machine the same comparisons run there (marker ``gpu``),
with a CUDA graph capture, queued calls whose page-locked buffers must outlive the
host's calls, and the work one listed forward queues (one kernel, one copy).
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import prefixscan as ps  # noqa: E402
from prefixscan.primitives.recurrence import packing as P  # noqa: E402
from prefixscan.testing import reference_linear_recurrence  # noqa: E402

CUDA = torch.cuda.is_available()
DEVICE = "cuda" if CUDA else "cpu"



def _here(test):
    """A test that runs on a's device: on a CUDA machine, there (marker ``gpu``)."""
    return pytest.mark.gpu(test) if CUDA else test


if CUDA:
    BACKENDS = [pytest.param("triton", id="cuda", marks=pytest.mark.gpu)]
else:
    BACKENDS = [pytest.param("cpu", id="cpu"), pytest.param("triton", id="interp", marks=pytest.mark.interpreter)]

LAYOUTS = [((2, None, 3), 1), ((2, 3, None), 2)]  # (B, T, C) and (B, C, T); None: the time axis
# Offsets per length: empty sequences first, inside and last, the last bound left out.
PATTERNS = {0: [[0], [0, 0, 0]],
            1: [[0], [0, 0, 1], [0, 1, 1]],
            13: [[0, 5], [0, 0, 3, 3, 13], [0, 1, 12, 13, 13], [0, 13]]}
MODES = {"plain": (None, False), "init": ("tensor", False), "final": (None, True),
         "init+final": ("tensor", True), "scalar+final": ("scalar", True)}


def _forms(offsets: list) -> dict:
    """The host forms of one list of offsets."""
    wide = np.asarray(offsets, dtype=np.int64)
    return {"list": list(offsets), "tuple": tuple(offsets), "int32": wide.astype(np.int32), "int64": wide,
            "uint64be": wide.astype(">u8")}


def _bits(t):
    """``t``'s bits, as integers (-0.0 and 0.0 differ; complex as pairs)."""
    t = t.detach().resolve_conj()
    if t.is_complex():
        t = torch.view_as_real(t)
    return t.contiguous().view({8: torch.int64, 4: torch.int32, 2: torch.int16, 1: torch.uint8}[t.element_size()])


def _assert_same_bits(got, want, what):
    assert got.shape == want.shape and got.dtype == want.dtype, what
    assert torch.equal(_bits(got), _bits(want)), what


def _bounds(offsets, n):
    bounds = list(offsets)
    return bounds if bounds[-1] == n else bounds + [n]


def _inputs(rng, shape, axis, n, count, dtype, log, init):
    shape = tuple(n if s is None else s for s in shape)
    decays = rng.uniform(0.3, 0.95, size=shape)
    a = -rng.uniform(0.05, 1.5, size=shape) if log else decays
    b = rng.normal(size=shape)
    if dtype.is_complex:
        a = a * np.exp(1j * rng.uniform(-1, 1, size=shape))
        b = b + 1j * rng.normal(size=shape)
    seeds = shape[:axis] + (count,) + shape[axis + 1:]
    a = torch.tensor(a, dtype=dtype, device=DEVICE, requires_grad=True)
    b = torch.tensor(b, dtype=dtype, device=DEVICE, requires_grad=True)
    if init == "tensor":
        init = torch.tensor(rng.normal(size=seeds), dtype=dtype, device=DEVICE, requires_grad=True)
    elif init == "scalar":
        init = 0.75
    return a, b, init


def _run(a, b, init, offsets, axis, reverse, log, final, backend, weights):
    """h (and the final states) and the gradients of a weighted sum."""
    out = ps.linear_recurrence(a, b, init=init, axis=axis, reverse=reverse, offsets=offsets, return_final=final,
                               log_space=log, backend=backend)
    h, last = out if final else (out, None)
    loss = (h * weights[0]).real.sum() + ((last * weights[1]).real.sum() if final else 0)
    inputs = [t for t in (a, b, init) if isinstance(t, torch.Tensor)]
    grads = torch.autograd.grad(loss, inputs, allow_unused=True) if loss.requires_grad else ()
    return [h] + ([last] if final else []) + [torch.zeros(()) if g is None else g for g in grads]


def _reference(a, b, init, bounds, axis, reverse, log):
    """h and the final states from the plain loop over each sequence alone."""
    a = a.detach().cpu().numpy()
    a = np.exp(a) if log else a
    b = b.detach().cpu().numpy()
    pieces, finals = [], []
    for k, (start, end) in enumerate(zip(bounds[:-1], bounds[1:])):
        seed = None
        if isinstance(init, torch.Tensor):
            seed = init.detach().cpu().numpy().take(k, axis=axis)
        elif init is not None:
            seed = np.asarray(init, b.dtype)
        steps = np.arange(start, end)
        h = reference_linear_recurrence(a.take(steps, axis=axis), b.take(steps, axis=axis), init=seed, axis=axis,
                                        reverse=reverse)
        pieces.append(h)
        lanes = b.shape[:axis] + b.shape[axis + 1:]
        if end > start:
            finals.append(h.take(0 if reverse else end - start - 1, axis=axis))
        else:
            finals.append(np.broadcast_to(np.zeros(lanes, b.dtype) if seed is None else seed, lanes))
    if not pieces:  # no sequence at all (offsets [0] on an empty axis)
        return np.zeros(b.shape, b.dtype), np.zeros(b.shape[:axis] + (0,) + b.shape[axis + 1:], b.dtype)
    return np.concatenate(pieces, axis=axis), np.stack(finals, axis=axis)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", sorted(PATTERNS))
@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("log", [False, True], ids=["lin", "log"])
@pytest.mark.parametrize("reverse", [False, True], ids=["fwd", "rev"])
@pytest.mark.parametrize("layout", LAYOUTS, ids=["BTC", "BCT"])
def test_host_offsets_give_the_bits_of_device_offsets(rng, backend, n, mode, log, reverse, layout):
    """h, the final states and the gradients of a, b and init: host offsets in every
    form against the same offsets as a tensor, bit for bit (the interpreter: the list
    only, its kernels are slow), and against the plain loop per sequence."""
    shape, axis = layout
    init_kind, final = MODES[mode]
    for pattern in PATTERNS[n]:
        bounds = _bounds(pattern, n)
        a, b, init = _inputs(rng, shape, axis, n, len(bounds) - 1, torch.float64, log, init_kind)
        weights = [torch.tensor(rng.normal(size=s), dtype=torch.float64, device=DEVICE)
                   for s in (a.shape, a.shape[:axis] + (len(bounds) - 1,) + a.shape[axis + 1:])]
        want = _run(a, b, init, torch.tensor(pattern, device=DEVICE), axis, reverse, log, final, backend, weights)
        forms = _forms(pattern)
        if DEVICE == "cpu" and backend == "triton":
            forms = {"list": forms["list"]}
        for name, given in forms.items():
            got = _run(a, b, init, given, axis, reverse, log, final, backend, weights)
            assert len(got) == len(want)
            for k, (g, w) in enumerate(zip(got, want)):
                _assert_same_bits(g, w, f"{name} {pattern} output {k}")
        ref_h, ref_final = _reference(a, b, init, bounds, axis, reverse, log)
        np.testing.assert_allclose(want[0].detach().cpu().numpy(), ref_h, rtol=1e-10, atol=1e-12)
        if final:
            np.testing.assert_allclose(want[1].detach().cpu().numpy(), ref_final, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.complex128], ids=["f32", "c128"])
@pytest.mark.parametrize("layout", LAYOUTS, ids=["BTC", "BCT"])
def test_other_dtypes_and_a_broadcast_decay(rng, backend, dtype, layout):
    """float32 and complex128, a decay broadcast over the lanes (an expanded view), seeds
    and final states, 31 steps: the same bits both ways."""
    shape, axis = layout
    pattern = [0, 0, 7, 8, 8, 30]
    bounds = _bounds(pattern, 31)
    a, b, init = _inputs(rng, shape, axis, 31, len(bounds) - 1, dtype, False, "tensor")
    lane = 0 if axis == 2 else 2  # a's channel axis
    a = a.detach().narrow(lane, 0, 1).clone().requires_grad_()
    weights = [torch.tensor(rng.normal(size=s), dtype=dtype, device=DEVICE) for s in (b.shape, init.shape)]
    want = _run(a, b, init, torch.tensor(pattern, device=DEVICE), axis, False, False, True, backend, weights)
    for name, given in _forms(pattern).items():
        got = _run(a, b, init, given, axis, False, False, True, backend, weights)
        for k, (g, w) in enumerate(zip(got, want)):
            _assert_same_bits(g, w, f"{name} output {k}")


def _pack(offsets, n, device, reverse=False, seeds=False, finals=False):
    """The packing the recurrence takes for ``offsets`` (host or device, by their form)."""
    bounds = P.sequence_bounds(offsets, n, device, whole=seeds or finals)
    return P.pack_sequences(bounds, n, device, reverse=reverse, seeds=seeds, finals=finals)


def _random_offsets(rng, n):
    cuts = np.sort(rng.integers(0, n + 1, size=rng.integers(0, 6)))
    offsets = [0] + cuts.tolist()
    if rng.random() < 0.5 and offsets[-1] != n:
        offsets.append(n)
    return offsets


@_here
def test_host_packing_is_the_device_packing(rng):
    """The arrays themselves (flags, restart positions, filled, picks), for random
    offsets in every host form, against the torch operations on the same bounds; and the
    fills of a capture against the bounds they stand for."""
    cases = 0
    for n in (0, 1, 2, 7, 8, 13, 31, 64):
        for _ in range(12):
            offsets = _random_offsets(rng, n)
            bounds = np.asarray(_bounds(offsets, n), dtype=np.int64)
            filled = P.filled_bounds(bounds, torch.device(DEVICE))
            assert torch.equal(filled.cpu(), torch.from_numpy(bounds))
            for reverse in (False, True):
                for seeds in (False, True):
                    for finals in (False, True):
                        want = P.device_packing(torch.tensor(bounds, device=DEVICE), n, reverse=reverse, seeds=seeds,
                                                finals=finals)
                        for name, given in _forms(offsets).items():
                            got = _pack(given, n, torch.device(DEVICE), reverse, seeds, finals)
                            assert got.count == want.count == len(bounds) - 1
                            for field in ("flags", "restart", "filled", "picks"):
                                g, w = getattr(got, field), getattr(want, field)
                                assert (g is None) == (w is None), (field, name, offsets)
                                if w is not None:
                                    assert g.device == w.device, (field, name)
                                    _assert_same_bits(g, w, f"{field} {name} {offsets} {n}")
                            cases += 1
    assert cases == 8 * 12 * 8 * 5


def _aten_ops(fn) -> list:
    from torch.profiler import ProfilerActivity, profile

    fn()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    return [e.name for e in prof.events() if e.name.startswith("aten::")
            and (e.cpu_parent is None or not e.cpu_parent.name.startswith("aten::"))]


@_here
def test_host_offsets_run_no_small_torch_operations():
    """Host offsets become the flags without torch operations on the device (at most
    the buffer, its copy and its views); a tensor of offsets takes about ten."""
    offsets = [0, 3, 10, 10, 40]
    device = torch.device(DEVICE)
    host = _aten_ops(lambda: _pack(offsets, 64, device))
    # On CUDA (torch 2.11, H200): the page-locked buffer, its NumPy view (detach,
    # resolve_conj, resolve_neg) and the copy (two `to`): host work, no kernel.
    assert len(host) <= (6 if device.type == "cuda" else 2), host
    seeded = _aten_ops(lambda: _pack(offsets, 64, device, seeds=True, finals=True))
    # the buffer's operations, the flags' slice, a slice and a view per array (13 on CUDA)
    assert len(seeded) <= len(host) + 1 + 2 * 3, seeded
    assert not {"aten::index_add", "aten::clamp", "aten::zeros", "aten::gt"} & set(host + seeded)
    tensor = torch.tensor(offsets, device=DEVICE)
    device_ops = _aten_ops(lambda: _pack(tensor, 64, device))
    assert "aten::index_add" in device_ops and len(device_ops) >= 8, device_ops


@_here
def test_a_dispatch_mode_takes_the_torch_operations(rng):
    """Under a torch dispatch mode (here one that only watches) host offsets take the
    torch operations, which any mode can trace; the results are the same bits."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Watch(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(str(func))
            return func(*args, **(kwargs or {}))

    a, b, init = _inputs(rng, (2, None, 3), 1, 13, 3, torch.float64, False, "tensor")
    want = ps.linear_recurrence(a.detach(), b.detach(), init=init.detach(), axis=1, offsets=[0, 4, 4, 13])
    with Watch() as watch:
        got = ps.linear_recurrence(a.detach(), b.detach(), init=init.detach(), axis=1, offsets=[0, 4, 4, 13])
    assert any("index_add" in op for op in watch.ops)
    _assert_same_bits(got, want, "h")


@_here
def test_a_bad_init_is_refused_before_host_offsets_reach_the_device():
    """With host offsets every argument is checked before anything is sent: an init of
    the wrong shape raises (naming init) with no torch operation and no copy issued."""
    from torch.profiler import ProfilerActivity, profile

    a = torch.rand(2, 13, 3, dtype=torch.float64, device=DEVICE)
    init = torch.ones(2, 5, 3, dtype=torch.float64, device=DEVICE)  # 3 sequences: (2, 3, 3)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if CUDA else [])
    with profile(activities=activities) as prof:
        with pytest.raises(ValueError, match="init"):
            ps.linear_recurrence(a, a, axis=1, offsets=[0, 4, 4, 13], init=init, return_final=True)
        if CUDA:
            torch.cuda.synchronize()
    assert not [e.name for e in prof.events() if e.name.startswith(("aten::", "Memcpy"))]


@_here
def test_bad_host_offsets_are_refused_before_any_work():
    """The host path checks as before: the error names offsets."""
    a = torch.rand(2, 5, dtype=torch.float64, device=DEVICE)
    for offsets in ([1, 3], [0, 4, 2], [0, 6], np.array([0, 2], dtype=np.float32), [0, True]):
        with pytest.raises((ValueError, TypeError), match="offsets"):
            ps.linear_recurrence(a, a, axis=1, offsets=offsets)


# ---------------------------------------------------------------------------
# On the GPU.

def _cuda_inputs(shape, seed, requires_grad=True):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    a = (torch.rand(shape, device="cuda", generator=gen) * 0.5 + 0.45).requires_grad_(requires_grad)
    b = torch.randn(shape, device="cuda", generator=gen).requires_grad_(requires_grad)
    return a, b, gen


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_gpu_cuda_graph_capture_with_host_offsets():
    """A forward and backward with listed offsets, seeds and final states captured in a
    CUDA graph (the bounds made by fills inside the capture: nothing read from host
    memory at replay), replayed on new data between eager calls whose page-locked
    buffers the host allocator hands out again: each replay matches the eager call."""
    shape, offsets = (2, 4096, 64), [0, 100, 100, 2000, 4095]
    a, b, gen = _cuda_inputs(shape, 7)
    init = torch.randn(2, 5, 64, device="cuda", generator=gen, requires_grad=True)
    g_h, g_final = torch.randn(shape, device="cuda", generator=gen), torch.randn(2, 5, 64, device="cuda",
                                                                                  generator=gen)

    def step():
        h, final = ps.linear_recurrence(a, b, init=init, axis=1, offsets=offsets, return_final=True)
        ((h * g_h).sum() + (final * g_final).sum()).backward()
        return h, final

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # warm up (compiles) outside the capture
        step()
    torch.cuda.current_stream().wait_stream(stream)
    a.grad = b.grad = init.grad = None
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        h, final = step()
    for k in range(3):
        with torch.no_grad():
            a.copy_(torch.rand(shape, device="cuda", generator=gen) * 0.5 + 0.45)
            b.copy_(torch.randn(shape, device="cuda", generator=gen))
            init.copy_(torch.randn(2, 5, 64, device="cuda", generator=gen))
            for t in (a, b, init):
                t.grad.zero_()
        for other in range(8):  # eager calls with other host offsets: page-locked blocks in use and freed
            ps.linear_recurrence(a.detach(), b.detach(), axis=1, offsets=[0, 1 + other, 4000])
        graph.replay()
        torch.cuda.synchronize()
        wa, wb, wi = (t.detach().clone().requires_grad_() for t in (a, b, init))
        eh, ef = ps.linear_recurrence(wa, wb, init=wi, axis=1, offsets=offsets, return_final=True)
        ((eh * g_h).sum() + (ef * g_final).sum()).backward()
        for got, want in ((h, eh), (final, ef), (a.grad, wa.grad), (b.grad, wb.grad), (init.grad, wi.grad)):
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_gpu_queued_calls_keep_their_offsets():
    """Calls queued behind a GPU sleep, each with other offsets (seeds and final states:
    every array of the buffer), the caller's lists changed after each call: the
    page-locked buffers must not be reused before their copies run, and no call waits
    on the GPU.  Each result against the same offsets as a tensor, bit for bit."""
    a, b, gen = _cuda_inputs((2, 4096, 32), 11, requires_grad=False)
    rng = np.random.default_rng(11)
    given = [[0] + np.sort(rng.integers(0, 4097, size=5)).tolist() for _ in range(48)]
    inits = [torch.randn(2, len(_bounds(o, 4096)) - 1, 32, device="cuda", generator=gen) for o in given]
    kept = [list(o) for o in given]
    torch.cuda._sleep(100_000_000)
    for o, i in zip(given, inits):  # compiled first, and a page-locked block cached for each queued call
        ps.linear_recurrence(a, b, init=i, axis=1, offsets=o, return_final=True)
    torch.cuda.synchronize()
    previous = torch.cuda.get_sync_debug_mode()
    torch.cuda.set_sync_debug_mode("error")
    try:
        torch.cuda._sleep(200_000_000)
        results = []
        for o, i in zip(given, inits):
            results.append(ps.linear_recurrence(a, b, init=i, axis=1, offsets=o, return_final=True))
            o[1:] = [4096] * (len(o) - 1)  # the caller's list changes while its copy waits
        ahead = not torch.cuda.current_stream().query()
    finally:
        torch.cuda.set_sync_debug_mode(previous)
    assert ahead
    for (h, final), o, i in zip(results, kept, inits):
        want_h, want_final = ps.linear_recurrence(a, b, init=i, axis=1, offsets=torch.tensor(o, device="cuda"),
                                                  return_final=True)
        _assert_same_bits(h, want_h, f"h {o}")
        _assert_same_bits(final, want_final, f"final {o}")


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_gpu_listed_forward_queues_one_copy_and_the_kernel():
    """The work one listed forward queues: the unpacked call's, plus one copy from
    page-locked memory; and a handful of torch operations on the host."""
    from torch.profiler import ProfilerActivity, profile

    shape = (1, 32768, 1024)
    a, b, _ = _cuda_inputs(shape, 3, requires_grad=False)
    listed = [int(c * shape[1]) for c in (0.0, 0.05, 0.12, 0.3, 0.31, 0.5, 0.62, 0.8, 0.93)] + [shape[1]]

    def device_work(fn):
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
        kinds = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        ops = [e.name for e in prof.events() if e.name.startswith("aten::")
               and (e.cpu_parent is None or not e.cpu_parent.name.startswith("aten::"))]
        return kinds, ops

    packed, packed_ops = device_work(lambda: ps.linear_recurrence(a, b, axis=1, offsets=listed))
    plain, plain_ops = device_work(lambda: ps.linear_recurrence(a, b, axis=1))
    copies = [k for k in packed if k.startswith("Memcpy")]
    assert len(copies) == 1 and "Pinned" in copies[0], packed
    assert sorted(k for k in packed if not k.startswith("Memcpy")) == sorted(plain), (packed, plain)
    # the buffer, its NumPy view, its copy, the flags' view (10 against 3 on torch 2.11, H200)
    assert len(packed_ops) <= len(plain_ops) + 7, (packed_ops, plain_ops)
