"""Linear recurrences ``h[t] = a[t] h[t-1] + b[t]`` in one pass: forward and fused backward.

The maps ``h -> a h + b`` compose into maps of the same form (the affine monoid,
Blelloch 1990, "Prefix sums and their applications", section 1.4), so a tile of
steps is scanned in registers (``tl.associative_scan`` of the pairs) and joined
to the state before it with one multiply-add.  Memory traffic is the roof: read
``a`` and ``b``, write ``h``; the backward reads ``a``, ``dL/dh`` and ``h`` and
writes ``dL/db`` and ``dL/da`` in the same pass.

Geometry: the broadcast shape seen as ``(P1, P2, T, Q)``: lanes ``(p, q)``, time
``T``; ``a`` and ``b`` come with their own strides (a broadcast decay has stride 0
and is never copied), ``h`` is written contiguous.  Two tile orientations:

* ``Q > 1`` (time strided, channels contiguous, ``(B, T, C)``): tiles ``[BT, BL]``
  of BL contiguous lanes, scanned along axis 0; every load is a coalesced row.
* ``Q == 1`` (time contiguous, ``(B, C, T)``): tiles ``[BL, BT]`` of BL lanes,
  scanned along axis 1.

Two ways to cover time (:func:`plan_for` picks by lanes against length, the
choice flash-linear-attention's kernels make between a sequential state per
program and a chunked scan):

* ``lookback=False``: one program per lane block walks the whole lane in chunks
  of BT steps, the state carried in registers (many lanes: each program's
  chunk keeps enough bytes in flight).
* ``lookback=True``: one tile per program, time split across programs; a tile
  publishes its aggregate map, finds the map of everything before it by the
  decoupled look-back (Merrill & Garland 2016, "Single-pass Parallel Prefix Scan
  with Decoupled Look-back", section 4; the engine's per-column carry), publishes its
  inclusive map and writes ``h`` (few lanes, long sequences).  Status words are the
  engine's (:mod:`prefixscan.backends.triton.engine.state`: epochs, and one-shot zeroed
  buffers under CUDA graph capture).

The reduce step of a recurrence held in pieces (the ranks of
:mod:`prefixscan.distributed`, dask chunks) is the same kernel with ``TOTAL``: it
reads ``a`` and ``b`` once and stores only each lane's map (the product of ``a``
and the last state from zero), nothing of ``h``.

The backward is the same kernel run the other way: ``dL/db[t] = dL/dh[t] +
conj(a[t+1]) dL/db[t+1]`` (the coefficient read one step behind in the backward's own
scan order; a later piece's adjoint joins the last ``dL/dh``), and ``dL/da[t] = dL/db[t]
conj(h[t-1])`` with ``h[-1] = init``, fused where ``dL/db`` is in registers (Martin &
Cundy 2018, "Parallelizing Linear Recurrent Neural Nets Over Sequence Length", section 2.2).  Complex values are
interleaved (re, im) pairs scanned as four real fields; 16-bit floats accumulate
in float32 and are rounded once.  Design and measurements: docs/design/recurrence.md.
The backend's entry points, which the registry finds, are in :mod:`.triton`.
"""

from __future__ import annotations

import functools

import triton
import triton.language as tl

from ..._environment import interpreter_mode
from ...backends.triton.device.tiles import _fn, _select, _where
from ...backends.triton.engine.pipeline import carry_columns, tile_id
from ...backends.triton.engine.state import identity_tensor, single_pass, status_words
from ...backends.triton.runtime import launch as runtime
from ...backends.triton.runtime.launch import Launch
from ...backends.triton.runtime.replay import Launched, Relaunch, StatusRenewal
from ...caches import register_cache
from .triton_decays import as_factor, log_affine_flat, log_affine_pair, then_decay, unit_decay
from .triton_maps import (_add_at, _affine_flat, _affine_pair, _complex_affine_flat, _complex_affine_pair, _conj,
                          _expand, _load, _log_split, _mul, _mul_add, _restarts, _scan_position, _store, _tile, _zeros)
from .triton_plans import RecurrencePlan, _edge_vectors, _sm_count, plan_for
from .triton_shift import SHIFTS, neighbours

__all__ = ["RecurrencePlan", "plan_for", "linear_recurrence", "linear_recurrence_backward",
           "linear_recurrence_total", "supports"]


# ---------------------------------------------------------------------------
# The kernel.

# T and Q keep Triton's divisibility-by-16 specialization: the time and lane masks are
# then known constant over 16-byte vectors, and the loads vectorize.
@triton.jit(do_not_specialize=["P", "QB", "segs", "tile_base", "epoch"])
def recurrence_kernel(io, status, counter_ptr, sizes, strides_a, strides_v, P, QB, segs, tile_base, epoch,
                      PAIR: tl.constexpr, FLAT: tl.constexpr, FIELDS: tl.constexpr, MODE: tl.constexpr,
                      TILE: tl.constexpr, PROTOCOL: tl.constexpr):
    """Arguments in groups: ``io`` the pointers (a, v = b or dL/dh, h, out, da, seed,
    restart flags, final adjoint);
    ``sizes`` (P2, T, Q) and ``strides_a``, ``strides_v`` (s_p1, s_p2, s_t, s_q) of a and v,
    specialized (Triton specializes every integer inside a tuple); the counts P, QB and
    segs not; ``PAIR``, ``FLAT`` the combines (each its own constexpr: Triton keys its disk
    cache by a function's source only where it is not inside a tuple); ``FIELDS``
    (ACC, COMPLEX, LOG, LOG_SPLIT); ``MODE`` (REVERSE, HAS_SEED, BACKWARD, NEED_A, TOTAL,
    RESTART, HAS_FINAL);
    ``TILE`` (TIME_AXIS, LOOKBACK, BT, BL, STAGES, CHUNKS, SHIFT, VEC_A, VEC_H); ``PROTOCOL``
    (WORDS, WINDOW, CHAINED).

    Forward (``BACKWARD`` False): ``out = h`` of coefficients ``a`` and inputs ``v = b``
    scanned in the direction ``REVERSE`` says, seeded per lane from ``seed_ptr``.
    ``TOTAL``: nothing of ``h`` stored; each lane's map instead, the product of ``a``
    into ``out`` and the last state into ``da`` (lane-shaped, ``(P, Q)``).  The walk's
    chunks are a loop software-pipelined over ``STAGES`` (1: not pipelined); ``CHUNKS``
    is the chunk count in the interpreter, which cannot range over a runtime bound (0
    compiled: computed from ``T``).
    Backward: ``out = dL/db`` of ``v = dL/dh`` with the coefficients ``conj(a)`` read one
    step behind in scan order, and ``da = dL/da`` from ``h`` (seeded by the forward's init);
    ``HAS_FINAL``: the adjoint from after the lane's end (``final_ptr``) joins its last ``dL/dh``;
    ``SHIFT`` says how the values one step off the tile are read (:mod:`.triton_shift`:
    loaded, or the aligned tile moved in registers, ``VEC_A``/``VEC_H`` elements a vector).
    ``a``/``v`` are at ``p1 * s_p1 + p2 * s_p2 + t * s_t + q * s_q``; ``out``, ``da`` and
    ``h`` contiguous ``(P, T, Q)``.  Programs: lane blocks (times ``segs`` tiles with
    ``LOOKBACK``).
    ``LOG``: ``a`` holds log decays (real only): ``PAIR``/``FLAT`` compose ``(la, b)`` maps,
    the published decays are sums of logs (``TOTAL``'s product too), and each is taken
    through ``exp`` in registers where it multiplies a state; the backward's
    ``dL/da`` is then with respect to the log decays, ``dL/db[t] h[t-1] exp(la[t])``.
    ``LOG_SPLIT``: a tile's scan carries each step's ``exp(la)`` beside ``la``
    (:func:`_log_split`) instead of composing ``(la, b)`` maps, an ``exp`` per combine;
    a walk that stores ``h`` or gradients scans ``(exp(la), b)`` as the linear kernel does.
    ``RESTART``: packed sequences, one byte a step (``T`` of them, shared by the lanes), 1
    where a sequence starts: the decay there reads as 0 (a log decay as -inf), so the
    state restarts, and the backward gives it no gradient (the decay one step behind in
    its own order reads as 0 where the forward's did, and ``dL/da`` is 0 there)."""
    a_ptr, v_ptr, h_ptr, out_ptr, da_ptr, seed_ptr, flags_ptr, final_ptr = io
    P2, T, Q = sizes
    sa_p1, sa_p2, sa_t, sa_q = strides_a
    sv_p1, sv_p2, sv_t, sv_q = strides_v
    ACC: tl.constexpr = FIELDS[0]
    COMPLEX: tl.constexpr = FIELDS[1]
    LOG: tl.constexpr = FIELDS[2]
    LOG_SPLIT: tl.constexpr = FIELDS[3]
    REVERSE: tl.constexpr = MODE[0]
    HAS_SEED: tl.constexpr = MODE[1]
    BACKWARD: tl.constexpr = MODE[2]
    NEED_A: tl.constexpr = MODE[3]
    TOTAL: tl.constexpr = MODE[4]
    RESTART: tl.constexpr = MODE[5]
    HAS_FINAL: tl.constexpr = MODE[6]
    TIME_AXIS: tl.constexpr = TILE[0]
    LOOKBACK: tl.constexpr = TILE[1]
    BT: tl.constexpr = TILE[2]
    BL: tl.constexpr = TILE[3]
    STAGES: tl.constexpr = TILE[4]
    CHUNKS: tl.constexpr = TILE[5]
    SHIFT: tl.constexpr = TILE[6]
    VEC_A: tl.constexpr = TILE[7]
    VEC_H: tl.constexpr = TILE[8]
    WORDS: tl.constexpr = PROTOCOL[0]
    WINDOW: tl.constexpr = PROTOCOL[1]
    CHAINED: tl.constexpr = PROTOCOL[2]
    tl.static_assert(not (LOG and COMPLEX), "log decays are real")
    # Log decays in a walk that stores h (or the backward's gradients): each decay goes
    # through exp as it is read and the chunk is scanned as the linear kernel scans it.
    # Its products span one chunk at most (the state, not a product, crosses chunks), and
    # the tile's b already composes with the same products; only the look-back and the
    # lane totals carry sums of logs across long spans.
    LINEAR_WALK: tl.constexpr = LOG and LOG_SPLIT and not LOOKBACK and not TOTAL
    FACTOR_LOG: tl.constexpr = LOG and not LINEAR_WALK
    tl.static_assert(not (RESTART and TOTAL), "lane maps of packed sequences are not taken")
    zero = (tl.program_id(0) * 0).to(ACC)
    # The engine's tile id: in start order from the counter with the look-back, else the
    # program id (a walk: one program per lane block, no status).
    vid = tile_id(counter_ptr, tile_base, segs, T, BT, not LOOKBACK)[0]
    if LOOKBACK:
        group = vid // segs
        seg = vid % segs
    else:
        group = vid
        seg = vid * 0
    r = tl.arange(0, BL)
    if TIME_AXIS == 0:  # BL contiguous lanes q of one p
        p = group // QB
        q = (group % QB) * BL + r
        lane_mask = q < Q
        p1 = p // P2
        p2 = p % P2
        lane_a = p1 * sa_p1 + p2 * sa_p2 + q * sa_q
        lane_v = p1 * sv_p1 + p2 * sv_p2 + q * sv_q
        lane_out = p * T * Q + q
        seed_index = p * Q + q
    else:  # BL lanes p, time contiguous
        p = group * BL + r
        lane_mask = p < P
        p1 = p // P2
        p2 = p % P2
        lane_a = p1 * sa_p1 + p2 * sa_p2
        lane_v = p1 * sv_p1 + p2 * sv_p2
        lane_out = p * T
        seed_index = p
    nothing = _zeros(BL, ACC, COMPLEX)
    if HAS_SEED:
        seed = _load(seed_ptr, seed_index, lane_mask, 0, ACC, COMPLEX)
    else:
        seed = nothing
    # Backward: coefficients one step behind in scan order, h one step ahead (read as
    # SHIFT says: triton_shift.neighbours).
    behind: tl.constexpr = 1 if REVERSE else -1
    ahead: tl.constexpr = -1 if REVERSE else 1
    s = tl.arange(0, BT)
    last: tl.constexpr = 0 if REVERSE else BT - 1  # the tile's last position in scan order
    if BACKWARD:
        carry = nothing  # dL/db after the lane's end is 0
    else:
        carry = seed
    product = unit_decay(BL, ACC, COMPLEX, LOG)  # TOTAL of the walk: the product of the chunks' coefficients
    # The bound inline (the interpreter turns an assigned number into a one-element array,
    # which its range() refuses); the look-back's one chunk as a runtime 1, which keeps its
    # compiled code as it was under a while loop (a constant 1 unrolls it).
    for c in tl.range(0, CHUNKS if CHUNKS else (segs // segs if LOOKBACK else (T + BT - 1) // BT),
                      num_stages=STAGES):
        chunk = seg + c
        if REVERSE:
            t0 = T - (chunk + 1) * BT
        else:
            t0 = chunk * BT
        t = t0 + s
        time_mask = (t >= 0) & (t < T)
        offs_v, mask = _tile(lane_v, lane_mask, t, time_mask, sv_t, TIME_AXIS)
        if BACKWARD:
            coef = _conj(neighbours(a_ptr, lane_a, lane_mask, t, time_mask, t0, T, sa_t, behind, SHIFT, VEC_A, BT, BL,
                                    TIME_AXIS, ACC, COMPLEX), COMPLEX)
        elif LOG:  # padding: the identity decay, log 1
            offs_a, mask_a = _tile(lane_a, lane_mask, t, time_mask, sa_t, TIME_AXIS)
            coef = _load(a_ptr, offs_a, mask_a, 0, ACC, COMPLEX)
        else:
            offs_a, mask_a = _tile(lane_a, lane_mask, t, time_mask, sa_t, TIME_AXIS)
            coef = _load(a_ptr, offs_a, mask_a, 1, ACC, COMPLEX)
        if RESTART:  # a sequence starts here: its decay reads as 0 (log decay -inf), whatever a holds
            cut = zero - float("inf") if LOG else zero
            coef = _where(_restarts(flags_ptr, lane_mask, t + (behind if BACKWARD else 0), time_mask, T, BL, TIME_AXIS),
                          (cut, zero) if COMPLEX else (cut,), coef)
        value = _load(v_ptr, offs_v, mask, 0, ACC, COMPLEX)
        if HAS_FINAL:  # the arriving adjoint, at the backward's first step: the lane's last (first, in reverse)
            value = _add_at(value, t, T - 1 if REVERSE else 0, final_ptr, seed_index, lane_mask, ACC, COMPLEX,
                            TIME_AXIS)
        if LINEAR_WALK:
            scanned = tl.associative_scan((tl.exp(coef[0]), value[0]), TIME_AXIS, _affine_flat, reverse=REVERSE)
        elif LOG and LOG_SPLIT:
            log_cum, _, b_cum = tl.associative_scan((coef[0], tl.exp(coef[0]), value[0]), TIME_AXIS, _log_split,
                                                     reverse=REVERSE)
            scanned = (log_cum, b_cum)
        else:
            scanned = tl.associative_scan(coef + value, TIME_AXIS, _fn(FLAT), reverse=REVERSE)
        if COMPLEX:
            coef_cum = scanned[:2]
            value_cum = scanned[2:]
        else:
            coef_cum = scanned[:1]
            value_cum = scanned[1:]
        if LOOKBACK:
            keep = _scan_position(s, last, TIME_AXIS)
            agg = _select(scanned, keep, TIME_AXIS)
            one = zero + (0 if LOG else 1)
            ones = tl.zeros([BL], dtype=ACC) + (0 if LOG else 1)
            if COMPLEX:
                start = (ones, nothing[0], carry[0], carry[1])
                ident = (one, zero, zero, zero)
            else:
                start = (ones, carry[0])
                ident = (one, zero)
            prefix = carry_columns(status, vid * BL + r, group * segs, seg, agg, start, ident, epoch, (PAIR, FLAT, False),
                                   (WORDS, WINDOW, CHAINED), BL)
            if COMPLEX:
                carry = prefix[2:]
            else:
                carry = prefix[1:]
        result = _mul_add(as_factor(coef_cum, FACTOR_LOG), _expand(carry, TIME_AXIS), value_cum, COMPLEX)
        if TOTAL:
            at_end = _scan_position(s, last, TIME_AXIS)
            if LOOKBACK:
                if seg == segs - 1:  # the lane's last tile: its inclusive map is the lane's
                    before = prefix[:2] if COMPLEX else prefix[:1]
                    _store(out_ptr, seed_index, then_decay(before, agg[:2] if COMPLEX else agg[:1], LOG, COMPLEX),
                           lane_mask, COMPLEX)
                    _store(da_ptr, seed_index, _select(result, at_end, TIME_AXIS), lane_mask, COMPLEX)
            else:
                product = then_decay(product, _select(coef_cum, at_end, TIME_AXIS), LOG, COMPLEX)
        else:
            offs_out, _ = _tile(lane_out, lane_mask, t, time_mask, Q, TIME_AXIS)
            _store(out_ptr, offs_out, result, mask, COMPLEX)
        if BACKWARD:
            if NEED_A:
                h_prev = neighbours(h_ptr, lane_out, lane_mask, t, time_mask, t0, T, Q, ahead, SHIFT, VEC_H, BT, BL,
                                    TIME_AXIS, ACC, COMPLEX)
                if HAS_SEED:  # h before the lane's first step is the forward's init
                    th = t + ahead
                    inside = (th >= 0) & (th < T)
                    _, at_edge = _tile(lane_out, lane_mask, th, time_mask & ~inside, Q, TIME_AXIS)
                    h_prev = _where(at_edge, _expand(seed, TIME_AXIS), h_prev)
                grad_a = _mul(result, _conj(h_prev, COMPLEX), COMPLEX)
                if LOG:  # d/d la of exp(la) h[t-1]: the decay at t itself, not the one behind
                    offs_la, mask_la = _tile(lane_a, lane_mask, t, time_mask, sa_t, TIME_AXIS)
                    grad_a = _mul(grad_a, as_factor(_load(a_ptr, offs_la, mask_la, 0, ACC, COMPLEX), LOG), COMPLEX)
                if RESTART:  # a decay the restart replaced has no gradient
                    grad_a = _where(_restarts(flags_ptr, lane_mask, t, time_mask, T, BL, TIME_AXIS),
                                    (zero, zero) if COMPLEX else (zero,), grad_a)
                _store(da_ptr, offs_out, grad_a, mask, COMPLEX)
        if not LOOKBACK:
            keep = _scan_position(s, last, TIME_AXIS)
            carry = _select(result, keep, TIME_AXIS)
    if TOTAL and not LOOKBACK:
        _store(out_ptr, seed_index, product, lane_mask, COMPLEX)
        _store(da_ptr, seed_index, carry, lane_mask, COMPLEX)


# ---------------------------------------------------------------------------
# Host side.

def supports(dtype) -> bool:
    """Whether the kernel takes this torch dtype (floats and complex floats)."""
    import torch

    return dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64,
                     torch.complex128)


def _coalesce(sizes: list, strides: list) -> tuple[list, list] | None:
    """Adjacent dims merged where every tensor's strides allow (size-1 dims dropped):
    ``(sizes, per-tensor strides)``."""
    out_sizes: list = []
    out_strides: list = [[] for _ in strides]
    for d, size in enumerate(sizes):
        if size == 1:
            continue
        if out_sizes and all(st[-1] == sv[d] * size for st, sv in zip(out_strides, strides)):
            out_sizes[-1] *= size
            for st, sv in zip(out_strides, strides):
                st[-1] = sv[d]
            continue
        out_sizes.append(size)
        for st, sv in zip(out_strides, strides):
            st.append(sv[d])
    return out_sizes, out_strides


def _geometry(shape: tuple, axis: int, tensors: tuple):
    """``(P1, P2, T, Q, [(s_p1, s_p2, s_t, s_q) per tensor])`` of tensors of ``shape``
    seen around ``axis``, or None where their strides need more outer or inner dims."""
    return _geometry_of(shape, axis, tuple(t.stride() for t in tensors))


@functools.lru_cache(maxsize=256)  # a few shapes per model: the host path skips the stride walk
def _geometry_of(shape: tuple, axis: int, strides: tuple):
    outer = _coalesce(list(shape[:axis]), [list(s[:axis]) for s in strides])
    inner = _coalesce(list(shape[axis + 1:]), [list(s[axis + 1:]) for s in strides])
    (osz, ost), (isz, ist) = outer, inner
    if len(osz) > 2 or len(isz) > 1:
        return None
    osz = [1] * (2 - len(osz)) + osz
    result = []
    for k, s in enumerate(strides):
        o = [0] * (2 - len(ost[k])) + ost[k]
        result.append((o[0], o[1], s[axis], ist[k][0] if isz else 0))
    return osz[0], osz[1], shape[axis], (isz[0] if isz else 1), tuple(result)


register_cache("prefixscan.primitives.recurrence.triton_kernel.geometry", _geometry_of.cache_clear)


def _fields(t):
    """A kernel argument for tensor ``t``: complex tensors as their real (re, im) view."""
    import torch

    return torch.view_as_real(t) if t.is_complex() else t


def _launch(*, a, v, h, out, da, seed, axis: int, reverse: bool, backward: bool, deterministic: bool,
            plan: RecurrencePlan | None, total: bool = False, log: bool = False, flags=None, final=None):
    import torch

    shape = tuple(a.shape)
    geometry = _geometry(shape, axis, (a, v))
    if geometry is None:  # strides that no (P1, P2, T, Q) view covers: copy the inputs once
        a, v = a.contiguous(), v.contiguous()
        geometry = _geometry(shape, axis, (a, v))
    fields = _fields(out)
    io = (_fields(a), _fields(v), _fields(h) if h is not None else fields, fields,
          _fields(da) if da is not None else fields, _fields(seed) if seed is not None else fields,
          flags if flags is not None else fields, _fields(final) if final is not None else fields)
    # A signature launched before replays its compiled kernel (planned replay: the
    # variant key and the arguments built once, docs/design/host-path.md).
    # The tensors' own dtypes: a complex tensor's fields are a real view (complex64 and float32
    # tensors give the kernel float32 pointers, and their launches differ).
    tensors = tuple([None if t is None else (t.dtype, not t.data_ptr() % 16)
                     for t in (a, v, h, out, da, seed, flags, final)])
    key = (geometry, out.device, tensors, reverse, backward, deterministic, plan, total, log)
    replay = _replays.get(key)
    if replay is not None and replay(io):
        return
    P1, P2, T, Q, ((sa_p1, sa_p2, sa_t, sa_q), (sv_p1, sv_p2, sv_t, sv_q)) = geometry
    P = P1 * P2
    interpreter = interpreter_mode() or out.device.type != "cuda"
    if plan is None:
        plan = plan_for(P, T, Q, 1 if interpreter else _sm_count(out.device.index or 0), interpreter, backward)
    complex_values = out.is_complex()
    acc = torch.float64 if out.dtype in (torch.float64, torch.complex128) else torch.float32
    accs = (acc,) * (4 if complex_values else 2)
    groups = P * -(-Q // plan.block_lanes) if Q > 1 else -(-P // plan.block_lanes)
    segs = -(-T // plan.block_time) if plan.lookback else 1
    grid = groups * segs
    words = status_words(accs, None)
    stream = 0 if interpreter else runtime.current_stream(out.device)
    if log:
        pair, flat = log_affine_pair, log_affine_flat
    else:
        pair, flat = (_complex_affine_pair, _complex_affine_flat) if complex_values else (_affine_pair, _affine_flat)
    vectors = _edge_vectors(plan, T, Q, (sa_p1, sa_p2, sa_t), a, h, interpreter)  # the backward's "edge" form
    constexprs = dict(PAIR=pair, FLAT=flat,
                      FIELDS=(tl.float64 if acc == torch.float64 else tl.float32, complex_values, log,
                              log and plan.log_split),
                      MODE=(reverse, seed is not None, backward, backward and da is not None, total,
                            flags is not None, final is not None),
                      TILE=(0 if Q > 1 else 1, plan.lookback, plan.block_time, plan.block_lanes, plan.stages,
                            (1 if plan.lookback else -(-T // plan.block_time)) if interpreter else 0,
                            SHIFTS.index(plan.shift), *vectors),
                      PROTOCOL=(words, 1 if deterministic else plan.window, deterministic))
    # The look-back's status is the engine's (epoch-tagged words, the shared tile counter);
    # a walk has no status at all (a one-element placeholder, which a replay may keep).
    entries = grid * plan.block_lanes
    capturing = out.device.type == "cuda" and torch.cuda.is_current_stream_capturing()
    # (a capture makes no tensor of its own for it: a copy to the device is not captured)
    placeholder = fields[0] if capturing else identity_tensor(0, fields.dtype, out.device)
    with single_pass(out.device, stream, grid, entries, accs, words, single=not plan.lookback,
                     placeholder=placeholder) as status:
        args = (io, status.buffers, status.counter, (P2, T, Q), (sa_p1, sa_p2, sa_t, sa_q), (sv_p1, sv_p2, sv_t, sv_q),
                P, -(-Q // plan.block_lanes), segs, status.tile_base, status.epoch)
        launch = Launch(recurrence_kernel, grid, plan.num_warps, stream, interpreter, args, constexprs)
        compiled = runtime.launch_kernel(launch)
    if compiled is not None and not capturing:  # a capture's status is one-shot: no replay of it
        renewal = None if status.state is None else StatusRenewal(status.state, entries, accs, words, stream, _AT)
        if len(_replays) >= _REPLAYS:
            _replays.clear()
        _replays[key] = Relaunch.of(Launched(launch, compiled, renewal), out.device)


_replays: dict = {}  # _launch's key -> Relaunch
_REPLAYS = 256  # signatures kept (a few per model)
register_cache("prefixscan.primitives.recurrence.triton_kernel.replays", lambda: _replays.clear())
_AT = recurrence_kernel.arg_names.index("tile_base")  # the tile base and epoch a replay renews


def _seed(init, shape: tuple, axis: int, dtype):
    """``init`` as a contiguous ``(P, Q)`` tensor of lane seeds in ``dtype``, or None."""
    if init is None:
        return None
    lanes = shape[:axis] + shape[axis + 1:]
    return init.to(dtype).expand(lanes).contiguous()


def _flags(restart):
    """``restart`` (a flag per step along the axis) as the kernel's bytes, or None."""
    import torch

    return None if restart is None else restart.to(torch.uint8).contiguous()


def linear_recurrence(a, b, init, axis: int, reverse: bool, *, deterministic: bool = False,
                      plan: RecurrencePlan | None = None, log_space: bool = False, restart=None):
    """``h`` of ``h[t] = a[t] h[t-1] + b[t]`` along ``axis`` (non-negative) of torch tensors
    ``a``, ``b`` of one shape and dtype (either may be an expanded view), ``h[-1] = init``
    (the lane shape, or None); ``reverse`` runs from the end.  One launch; a new
    contiguous tensor of a's dtype.  ``deterministic``: the chained hand-off, bitwise
    reproducible.  ``plan`` forces a tiling (tests, benchmarks).  ``log_space``: ``a``
    holds real log decays, ``h[t] = exp(a[t]) h[t-1] + b[t]``.  ``restart``: a flag per
    step along ``axis`` (a tensor of its length on a's device), nonzero where a packed
    sequence starts: the decay there reads as 0 (a log decay as -inf)."""
    import torch

    h = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    if h.numel():
        seed = _seed(init, tuple(h.shape), axis, _accumulator(a.dtype))
        _launch(a=a, v=b, h=None, out=h, da=None, seed=seed, axis=axis, reverse=reverse, backward=False,
                deterministic=deterministic, plan=plan, log=log_space, flags=_flags(restart))
    return h


def linear_recurrence_total(a, b, axis: int, reverse: bool, *, plan: RecurrencePlan | None = None,
                            log_space: bool = False):
    """Each lane's map ``h_in -> A h_in + B`` of the recurrence along ``axis`` (non-negative):
    ``(A, B)``, contiguous tensors of the lane shape in the accumulator dtype (16-bit
    floats in float32), from one read of ``a`` and ``b`` (expanded views of one shape
    allowed) and nothing of ``h`` written: the recurrence kernel with ``TOTAL``.
    ``log_space``: ``a`` holds log decays and ``A`` is their sum."""
    import torch

    acc = _accumulator(a.dtype)
    lanes = tuple(a.shape[:axis] + a.shape[axis + 1:])
    if not a.numel():  # no steps: the identity map (1, 0), (0, 0) in log space
        unit = torch.zeros if log_space else torch.ones
        return unit(lanes, dtype=acc, device=a.device), torch.zeros(lanes, dtype=acc, device=a.device)
    product = torch.empty(lanes, dtype=acc, device=a.device)  # every lane is stored by the kernel
    state = torch.empty(lanes, dtype=acc, device=a.device)
    _launch(a=a, v=b, h=None, out=product, da=state, seed=None, axis=axis, reverse=reverse, backward=False,
            deterministic=False, plan=plan, total=True, log=log_space)
    return product, state


def linear_recurrence_backward(a, h, grad, init, axis: int, reverse: bool, *, need_a: bool = True,
                               deterministic: bool = False, plan: RecurrencePlan | None = None,
                               log_space: bool = False, restart=None, final=None):
    """``(dL/da or None, dL/db)`` of ``h = linear_recurrence(a, b, init, axis, reverse,
    restart=restart)`` from ``grad = dL/dh``, in one launch (complex values: torch's
    conjugate convention; ``log_space``: ``dL/da`` with respect to the log decays; 0 at
    the restarts).  ``final`` (lanes, or None): an adjoint from after the last step, added to its ``grad``."""
    import torch

    grad_b = torch.empty(h.shape, dtype=a.dtype, device=a.device)
    grad_a = torch.empty_like(grad_b) if need_a else None
    if grad_b.numel():
        seed = _seed(init, tuple(h.shape), axis, _accumulator(a.dtype)) if need_a else None
        _launch(a=a, v=grad.to(a.dtype), h=h, out=grad_b, da=grad_a, seed=seed, axis=axis, reverse=not reverse,
                backward=True, deterministic=deterministic, plan=plan, log=log_space, flags=_flags(restart),
                final=_seed(final, tuple(h.shape), axis, _accumulator(a.dtype)))
    return grad_a, grad_b


def _accumulator(dtype):
    import torch

    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
