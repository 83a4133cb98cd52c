"""The CPU's radix sort: a compiled least-significant-digit radix sort (Numba).

Keys are sorted as the order-preserving unsigned integers of :mod:`.keys`, by
8-bit digits from the least significant one up; each digit pass is a stable
counting sort (Knuth, TAOCP vol. 3, 5.2.5), so the whole sort is stable.  Per row:

1. one counting pass reads the keys once and counts every digit pass's digits
   (``passes x 256`` counters; Terdiman 2000, "Radix sort revisited"), and ORs
   the raw bits for the check of ``key_bits``;
2. a pass whose digit is the same for every key (one counter holds the row's
   length) moves nothing and is skipped: int64 keys below 2^32 take 4 passes, not 8;
3. every remaining pass scatters the keys (and the payload: row indices for
   ``argsort``, the values for a sort with one values array) from one buffer to
   the other at the running offsets of their digits (ping-pong buffers, arranged
   so that the last pass writes the result), the keys mapped again in each pass
   from the original bits they carry (so the result holds the input's bits).

Indices travel as int32 while a row has fewer than 2^31 elements and the last
pass writes them as int64.  Rows of at most :data:`SHORT_ROW` elements take a
stable insertion sort instead (the 256 counters per pass cost more there).
Rows run one chunk per thread (the kernels release the GIL).

Drivers take host arrays (``(rows, length)`` C-contiguous keys as their unsigned
storage, see :class:`.keys.KeyCode`) and return NumPy arrays;
docs/design/sort.md has the measurements.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit

from ...backends.cpu.compiled.launch import call
from .keys import KINDS, KeyCode

__all__ = ["sort_rows", "DIGIT_BITS", "SHORT_ROW", "THREADS", "THREADED_FROM"]

DIGIT_BITS = 8
RADIX = 1 << DIGIT_BITS
#: Rows of at most this many elements are sorted by insertion.
SHORT_ROW = 32
#: Inputs of at least this many elements (and several rows) run one chunk of rows per thread.
THREADED_FROM = 1 << 16
THREADS = max(1, min(8, os.cpu_count() or 1))
_POOL: list = []

_FLAGS = dict(cache=True, nogil=True, error_model="numpy", boundscheck=False)
_BOOL, _SIGNED, _FLOAT = KINDS.index("bool"), KINDS.index("signed"), KINDS.index("float")
#: Payload modes of a pass: none, the row index (the first pass of an argsort), copied.
NO_PAYLOAD, IOTA, COPY = 0, 1, 2


@njit(inline="always", **_FLAGS)
def _mapped(u, kind, sign, magnitude, inf, ones, mask, flip):
    """The ordered key (uint64) of raw bits ``u`` (see :mod:`.keys`)."""
    k = np.uint64(u)
    if kind == _SIGNED:
        k = k ^ sign
    elif kind == _FLOAT:
        m = k & magnitude
        if m > inf:
            k = ones
        elif m == np.uint64(0):
            k = sign
        elif k & sign:
            k = k ^ ones
        else:
            k = k | sign
    elif kind == _BOOL:
        k = np.uint64(1) if k != np.uint64(0) else np.uint64(0)
    return (k & mask) ^ flip


@njit(**_FLAGS)
def _count(keys, counts, passes, code):
    """Digit counts of every pass over ``keys`` into ``counts`` ([passes, 256], zeroed
    here); returns the OR of the raw bits."""
    kind, sign, magnitude, inf, ones, mask, flip = code
    counts[:passes, :] = 0
    seen = np.uint64(0)
    for i in range(keys.shape[0]):
        u = keys[i]
        seen |= np.uint64(u)
        k = _mapped(u, kind, sign, magnitude, inf, ones, mask, flip)
        for p in range(passes):
            counts[p, np.intp((k >> np.uint64(DIGIT_BITS * p)) & np.uint64(RADIX - 1))] += 1
    return seen


@njit(**_FLAGS)
def _scatter(src, dst, src_pay, dst_pay, offsets, shift, mode, write_keys, code):
    """One stable counting-sort pass: ``src`` (and its payload) to ``dst`` at the running
    ``offsets`` of their digits at ``shift``."""
    kind, sign, magnitude, inf, ones, mask, flip = code
    s = np.uint64(shift)
    for i in range(src.shape[0]):
        u = src[i]
        d = np.intp((_mapped(u, kind, sign, magnitude, inf, ones, mask, flip) >> s) & np.uint64(RADIX - 1))
        j = offsets[d]
        offsets[d] = j + 1
        if write_keys:
            dst[j] = u
        if mode == IOTA:
            dst_pay[j] = i
        elif mode == COPY:
            dst_pay[j] = src_pay[i]


@njit(**_FLAGS)
def _insertion(src, dst, src_pay, dst_pay, mode, code):
    """A stable insertion sort of a short row into ``dst`` (and its payload)."""
    kind, sign, magnitude, inf, ones, mask, flip = code
    n = src.shape[0]
    for i in range(n):
        u = src[i]
        k = _mapped(u, kind, sign, magnitude, inf, ones, mask, flip)
        j = i
        while j > 0 and _mapped(dst[j - 1], kind, sign, magnitude, inf, ones, mask, flip) > k:
            dst[j] = dst[j - 1]
            if mode != NO_PAYLOAD:
                dst_pay[j] = dst_pay[j - 1]
            j -= 1
        dst[j] = u
        if mode == IOTA:
            dst_pay[j] = i
        elif mode == COPY:
            dst_pay[j] = src_pay[i]


@njit(**_FLAGS)
def _exclusive(counts, p, offsets):
    total = 0
    for d in range(RADIX):
        offsets[d] = total
        total += counts[p, d]


@njit(**_FLAGS)
def _sort_row(keys, out, tmp, pay, out_pay, tmp_pay, counts, offsets, active, passes, mode, write_keys, check_bits,
              code):
    """Sort one row: ``keys`` (and ``pay`` with ``mode`` COPY) into ``out`` / ``out_pay``
    through ``tmp`` / ``tmp_pay``.  Returns False when a key has bits at or above
    ``check_bits`` (> 0: the key_bits check), True otherwise."""
    n = keys.shape[0]
    if n <= SHORT_ROW:
        if check_bits:
            seen = np.uint64(0)
            for i in range(n):
                seen |= np.uint64(keys[i])
            if seen >> np.uint64(check_bits):
                return False
        _insertion(keys, out, pay, out_pay, mode, code)
        return True
    seen = _count(keys, counts, passes, code)
    if check_bits and seen >> np.uint64(check_bits):
        return False
    first = _mapped(keys[0], code[0], code[1], code[2], code[3], code[4], code[5], code[6])
    m = 0
    for p in range(passes):
        if counts[p, np.intp((first >> np.uint64(DIGIT_BITS * p)) & np.uint64(RADIX - 1))] != n:
            active[m] = p
            m += 1
    if m == 0:  # every key has the same digits: already in order
        out[:] = keys
        if mode == IOTA:
            for i in range(n):
                out_pay[i] = i
        elif mode == COPY:
            out_pay[:] = pay
        return True
    for k in range(m):
        p = active[k]
        _exclusive(counts, p, offsets)
        shift = DIGIT_BITS * p
        last = k == m - 1
        keep = write_keys or not last
        to_out = (m - 1 - k) % 2 == 0  # the last pass writes ``out``
        if k == 0:
            if to_out:
                _scatter(keys, out, pay, out_pay, offsets, shift, mode, keep, code)
            else:
                _scatter(keys, tmp, pay, tmp_pay, offsets, shift, mode, keep, code)
        else:
            step = COPY if mode != NO_PAYLOAD else NO_PAYLOAD
            if to_out:
                _scatter(tmp, out, tmp_pay, out_pay, offsets, shift, step, keep, code)
            else:
                _scatter(out, tmp, out_pay, tmp_pay, offsets, shift, step, keep, code)
    return True


@njit(**_FLAGS)
def _sort_rows(keys, out, pay, out_pay, tmp, tmp_pay, lo, hi, passes, mode, write_keys, check_bits, code):
    """:func:`_sort_row` over rows ``lo:hi`` of the 2-D arrays; returns the first row
    that fails the key_bits check, or -1."""
    counts = np.zeros((max(passes, 1), RADIX), dtype=np.int64)
    offsets = np.zeros(RADIX, dtype=np.int64)
    active = np.zeros(max(passes, 1), dtype=np.int64)
    for r in range(lo, hi):
        row_pay = pay[r] if mode == COPY else pay[0]
        ok = _sort_row(keys[r], out[r], tmp, row_pay, out_pay[r] if mode != NO_PAYLOAD else out_pay[0], tmp_pay,
                       counts, offsets, active, passes, mode, write_keys, check_bits, code)
        if not ok:
            return r
    return -1


def code_tuple(code: KeyCode) -> tuple:
    """The mapping's parameters as the kernels take them: the kind's index, then the
    sign bit, the magnitude mask, +inf's bits, all ones, the sorted bits and the
    descending flip, each a uint64."""
    u = np.uint64
    return (code.kind_index, u(code.sign), u(code.sign - 1), u(code.inf_bits), u(code.ones), u(code.mask),
            u(code.flip))


def _run_all(jobs) -> list:
    if len(jobs) == 1:
        return [jobs[0]()]
    if not _POOL:
        _POOL.append(ThreadPoolExecutor(max_workers=max(1, THREADS - 1), thread_name_prefix="prefixscan-sort"))
    futures = [_POOL[0].submit(job) for job in jobs[1:]]
    results = [jobs[0]()]
    results += [f.result() for f in futures]
    return results


def sort_rows(keys: np.ndarray, code: KeyCode, *, payload: np.ndarray | None = None, argsort: bool = False,
              write_keys: bool = True, threads: int | None = None) -> tuple:
    """Sort each row of ``keys`` (2-D, C-contiguous, ``code.storage`` dtype) stably.

    ``argsort``: the payload is every element's index in its row (int64 result);
    else ``payload`` (2-D like ``keys``, any dtype of <= 8 bytes Numba copies, or
    None) moves with its key.  Returns ``(sorted keys or None, payload or None)``.
    Raises ValueError (``key_bits``) for a key outside [0, 2**code.key_bits)."""
    rows, n = keys.shape
    mode = IOTA if argsort else (COPY if payload is not None else NO_PAYLOAD)
    out = np.empty((rows, n), keys.dtype)
    if argsort:
        out_pay = np.empty((rows, n), np.int64)
        step_dtype = np.int32 if n < (1 << 31) else np.int64
    elif payload is not None:
        out_pay = np.empty((rows, n), payload.dtype)
        step_dtype = payload.dtype
    else:
        out_pay = np.empty((1, 0), np.int64)
        step_dtype = np.int64
    pay = payload if mode == COPY else np.empty((1, 0), np.int64)
    passes = code.passes(DIGIT_BITS)
    check = code.key_bits if code.key_bits is not None and code.key_bits < code.width else 0
    params = code_tuple(code)
    threads = THREADS if threads is None else threads
    chunks = min(threads, rows) if rows * n >= THREADED_FROM else 1
    bounds = [rows * t // chunks for t in range(chunks + 1)]

    def job(lo, hi):
        tmp = np.empty(n, keys.dtype)
        tmp_pay = np.empty(n if mode != NO_PAYLOAD else 0, step_dtype)
        return call(_sort_rows, keys, out, pay, out_pay, tmp, tmp_pay, lo, hi, passes, mode, write_keys, check,
                    params)

    failed = [r for r in _run_all([lambda lo=lo, hi=hi: job(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:])])
              if r >= 0]
    if failed:
        raise ValueError(f"key_bits={code.key_bits}: x has a key outside [0, 2**{code.key_bits}) (in row "
                         f"{min(failed)} of the sorted rows)")
    return (out if write_keys else None), (out_pay if mode != NO_PAYLOAD else None)
