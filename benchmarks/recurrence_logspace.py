"""The log-decay cases of the recurrence benchmark (``benchmarks/recurrence.py
--log-space``): ``linear_recurrence(..., log_space=True)`` against flash-linear-attention's
HGRN kernels (``chunk_hgrn``; ``fused_recurrent_hgrn`` up to ``RECURRENT_MAX_STEPS``) on the
same log gates, timed both ways (one call per sample, and queued behind a GPU sleep), with
the linear kernel on the same decays and on ``exp(g)`` for comparison, and a packed case."""

from __future__ import annotations

import json
import math
from pathlib import Path

import prefixscan as ps
from recurrence_common import _both, _cells, _copy_ms, _fwd_bwd, _queued_time, _row


LOG_SPACE_SHAPES = [  # (name, shape, axis): HGRN's (B, T, D) along T, and (B, C, T)
    ("BTD 8x4096x1024", (8, 4096, 1024), 1),
    ("BTD 8x2048x4096", (8, 2048, 4096), 1),
    ("BCT 8x1024x4096", (8, 1024, 4096), 2),
    ("BCT 1x64x2^20", (1, 64, 1 << 20), 2),
]


def _fla_hgrn():
    """flash-linear-attention's HGRN kernels ``(chunk, fused_recurrent, note)``; Nones and
    the import error where it does not import."""
    try:
        from fla.ops.hgrn import chunk_hgrn, fused_recurrent_hgrn
    except Exception as exc:  # noqa: BLE001 - a peer that does not import is reported, not fatal
        return None, None, f"{type(exc).__name__}: {exc}"[:300]
    return chunk_hgrn, fused_recurrent_hgrn, "fla.ops.hgrn (chunk_hgrn, fused_recurrent_hgrn)"


def _log_inputs(shape, dtype, requires_grad=False, seed=0):
    """Log gates ``logsigmoid(N(3, 1))`` (decays around 0.95) and inputs, on the GPU."""
    import torch

    gen = torch.Generator(device="cuda").manual_seed(seed)
    g = torch.nn.functional.logsigmoid(torch.randn(shape, device="cuda", generator=gen) + 3.0).to(dtype)
    x = torch.randn(shape, device="cuda", generator=gen).to(dtype)
    if requires_grad:
        g.requires_grad_()
        x.requires_grad_()
    return g, x


def _btd(t, axis):
    """``t`` in HGRN's (B, T, D) layout, contiguous (a copy for a (B, C, T) tensor)."""
    return t if axis == 1 else t.transpose(1, 2).contiguous()


def _peer_both(rec: dict, key: str, fn, repeats: int) -> None:
    """A peer timed both ways (``_both``) under ``key``, or its error as a string."""
    try:
        _both(rec, key + "_", fn, repeats)
    except Exception as exc:  # noqa: BLE001 - a peer that fails is reported, not fatal
        rec[f"{key}_error"] = f"{type(exc).__name__}: {exc}"[:300]


#: Steps beyond which ``fused_recurrent_hgrn`` (one program walks a lane) is not timed:
#: 0.44 s a forward call at (1, 64, 2^20) on an H200, 3000x ours.
RECURRENT_MAX_STEPS = 1 << 16


def bench_log_space(repeats: int) -> list[dict]:
    """Log decays against flash-linear-attention's HGRN (see the module docstring)."""
    import torch

    chunk, recurrent, note = _fla_hgrn()
    print(f"flash-linear-attention: {note}", flush=True)
    records = []
    for name, shape, axis in LOG_SPACE_SHAPES:
        n = math.prod(shape)
        peers = [] if chunk is None else [("fla_chunk", chunk)]
        skipped = None
        if recurrent is not None and shape[axis] <= RECURRENT_MAX_STEPS:
            peers.append(("fla_recurrent", recurrent))
        elif recurrent is not None:
            skipped = f"not timed: {shape[axis]} steps a lane, over RECURRENT_MAX_STEPS = {RECURRENT_MAX_STEPS}"
        for dtype, itemsize in ((torch.float32, 4), (torch.bfloat16, 2)):
            copy = _copy_ms(n, itemsize, repeats, timer=_queued_time)
            g, x = _log_inputs(shape, dtype)
            rec = dict(case=name, pass_="forward", dtype=str(dtype).replace("torch.", ""), shape=shape, axis=axis,
                       roof_ms=copy * 1.5, log_space=True)
            _both(rec, "", lambda: ps.linear_recurrence(g, x, axis=axis, log_space=True), repeats)
            decay = g.float().exp().to(dtype)
            rec["linear_queued_ms"] = _queued_time(lambda: ps.linear_recurrence(decay, x, axis=axis), repeats)
            rec["exp_then_linear_queued_ms"] = _queued_time(lambda: ps.linear_recurrence(g.exp(), x, axis=axis),
                                                            repeats)
            if chunk is not None:
                gb, xb = _btd(g, axis), _btd(x, axis)
                mine = _btd(ps.linear_recurrence(g, x, axis=axis, log_space=True), axis)
                rec["max_abs_diff_fla"] = float((mine.float() - chunk(xb, gb)[0].float()).abs().max())
                for key, fn in peers:
                    _peer_both(rec, key, lambda fn=fn: fn(xb, gb), repeats)
                del gb, xb, mine
            else:
                rec["fla_error"] = note
            if skipped:
                rec["fla_recurrent_error"] = skipped
            _finish_log_space(rec, records)
            # forward + backward
            g, x = _log_inputs(shape, dtype, requires_grad=True)
            grad = torch.randn(shape, device="cuda").to(dtype)
            rec = dict(case=name, pass_="forward+backward", dtype=rec["dtype"], shape=shape, axis=axis,
                       roof_ms=copy * 4.0, log_space=True)
            _both(rec, "", _fwd_bwd(lambda u, v: ps.linear_recurrence(u, v, axis=axis, log_space=True), g, x, grad),
                  repeats)
            if chunk is not None:
                gb, xb = (_btd(t.detach(), axis).requires_grad_() for t in (g, x))
                grad_b = _btd(grad, axis)
                for key, fn in peers:
                    _peer_both(rec, key, _fwd_bwd(lambda u, v, fn=fn: fn(v, u)[0], gb, xb, grad_b), repeats)
                del gb, xb, grad_b
            if skipped:
                rec["fla_recurrent_error"] = skipped
            _finish_log_space(rec, records)
            g = x = grad = decay = None  # freed before the next shape
            torch.cuda.empty_cache()
    records.append(_log_space_packed(repeats, recurrent))
    return records


def _finish_log_space(rec: dict, records: list) -> None:
    """The ratios of a log-space record (queued: roof, and each peer's time over ours)."""
    rec["roof"] = rec["roof_ms"] / rec["queued_ms"]
    for key in ("fla_chunk", "fla_recurrent"):
        if f"{key}_queued_ms" in rec:
            rec[f"vs_{key}"] = rec[f"{key}_queued_ms"] / rec["queued_ms"]
            rec[f"vs_{key}_one_call"] = rec[f"{key}_ms"] / rec["ms"]
    records.append(rec)
    print(json.dumps(rec), flush=True)


def _log_space_packed(repeats: int, recurrent) -> dict:
    """Packed sequences, (1, 32768, 1024) float32 in 9 sequences, forward: ``offsets``
    against ``fused_recurrent_hgrn`` with ``cu_seqlens``, and against the same total
    length unpacked (queued device time); the offsets on the device (checked there:
    one synchronization a call) and as a list (``listed_``)."""
    import torch

    shape = (1, 32768, 1024)
    g, x = _log_inputs(shape, torch.float32)
    cuts = [0, 1000, 4096, 4097, 9000, 16384, 20000, 27000, 31000, 32768]
    offsets = torch.tensor(cuts, device="cuda")
    rec = dict(case="packed 1x32768x1024, 9 sequences", pass_="forward", dtype="float32", shape=shape, axis=1,
               roof_ms=_copy_ms(math.prod(shape), 4, repeats, timer=_queued_time) * 1.5, log_space=True,
               unpacked_queued_ms=_queued_time(lambda: ps.linear_recurrence(g, x, axis=1, log_space=True), repeats))
    _both(rec, "", lambda: ps.linear_recurrence(g, x, axis=1, offsets=offsets, log_space=True), repeats)
    rec["listed_queued_ms"] = _queued_time(lambda: ps.linear_recurrence(g, x, axis=1, offsets=cuts, log_space=True),
                                           repeats)
    rec["listed_vs_unpacked_queued"] = rec["unpacked_queued_ms"] / rec["listed_queued_ms"]
    if recurrent is not None:
        cu = offsets.to(torch.long)
        try:
            theirs = recurrent(x, g, cu_seqlens=cu)[0]
            mine = ps.linear_recurrence(g, x, axis=1, offsets=offsets, log_space=True)
            rec["max_abs_diff_fla"] = float((mine - theirs.float()).abs().max())
        except Exception as exc:  # noqa: BLE001
            rec["fla_recurrent_error"] = f"{type(exc).__name__}: {exc}"[:300]
        else:
            _peer_both(rec, "fla_recurrent", lambda: recurrent(x, g, cu_seqlens=cu), repeats)
    records: list = []
    _finish_log_space(rec, records)
    return rec


def _log_space_markdown(records: list[dict], device: str) -> str:
    nan = float("nan")
    lines = [f"# linear_recurrence(log_space=True) on {device}", "",
             "Queued: calls queued behind a GPU sleep (device time per call, the host ahead); one call: events "
             "around each call.  Ratios: the peer's time over ours (queued; one call in brackets).", "",
             "| case | pass | dtype | queued ms | of roof | one call ms | linear on exp(g) | exp(g) in the call | "
             "x fla chunk | x fla recurrent | max diff vs fla |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        ratios = [f"{a} ({b})" for a, b in zip(_cells(r, ("vs_fla_chunk", "vs_fla_recurrent")),
                                               _cells(r, ("vs_fla_chunk_one_call", "vs_fla_recurrent_one_call")))]
        lines.append(_row([r["case"], r["pass_"], r["dtype"]]
                          + _cells(r, ("queued_ms", "roof", "ms", "linear_queued_ms", "exp_then_linear_queued_ms"))
                          + ratios + [f"{r.get('max_abs_diff_fla', nan):.2g}"]))
    for r in records:
        if "listed_queued_ms" in r:
            lines += ["", f"{r['case']}: queued {r['unpacked_queued_ms']:.3f} ms unpacked, {r['listed_queued_ms']:.3f} "
                      f"with the offsets as a list ({r['listed_vs_unpacked_queued']:.2f} of unpacked's speed), "
                      f"{r['queued_ms']:.3f} with device offsets (checked there: one synchronization a call)."]
    errors = [(r, k, v) for r in records for k, v in r.items() if k.endswith("_error")]
    if errors:
        lines += ["", "## Peers that did not run", ""]
        lines += [f"- {r['case']} {r['pass_']} {r['dtype']}: {k}: {v}" for r, k, v in errors]
    return "\n".join(lines) + "\n"


def run(out: Path, repeats: int) -> None:
    """Every log-space case on the current CUDA device; ``recurrence-cuda-log-space.{json,md}``
    under ``out``."""
    import torch

    info = dict(device=torch.cuda.get_device_name(0), torch=torch.__version__)
    records = bench_log_space(repeats)
    stem = out / "recurrence-cuda-log-space"
    stem.with_suffix(".json").write_text(json.dumps(dict(info=info, records=records), indent=1, default=str))
    stem.with_suffix(".md").write_text(_log_space_markdown(records, info["device"]))
    print(stem.with_suffix(".md").read_text())
