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

Payloads move as the unsigned integers of their width, and every payload array
of one sort has one dtype, so that each pass compiles once per key width and
payload width (Numba compiles a callee once per distinct argument types, and a
caller with several forms of its callees took half a minute to compile): indices
travel as uint32 while a row has fewer than 2^32 elements, widened to int64 at
the end (a sort without payload shares that form).  The CPU backend sends rows of at most 32 keys to
NumPy (the 256 counters of a pass cost more than such a row's sort).
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

__all__ = ["sort_rows", "payload_view", "DIGIT_BITS", "THREADS", "THREADED_FROM"]

DIGIT_BITS = 8
RADIX = 1 << DIGIT_BITS
#: Inputs of at least this many elements (and several rows) run one chunk of rows per thread.
THREADED_FROM = 1 << 16
THREADS = max(1, min(8, os.cpu_count() or 1))
_POOL: list = []

_FLAGS = dict(cache=True, nogil=True, error_model="numpy", boundscheck=False)
_BOOL, _SIGNED, _FLOAT = KINDS.index("bool"), KINDS.index("signed"), KINDS.index("float")
#: Payload modes of a pass: none, the row index (the first pass of an argsort), copied.
NO_PAYLOAD, IOTA, COPY = 0, 1, 2


@njit(**_FLAGS)
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
def _exclusive(counts, p, offsets):
    total = 0
    for d in range(RADIX):
        offsets[d] = total
        total += counts[p, d]


@njit(**_FLAGS)
def _sort_rows(keys, out, pay, out_pay, tmp, tmp_pay, counts, offsets, active, lo, hi, passes, mode, write_keys,
               check_bits, code):
    """Sort rows ``lo:hi`` of ``keys`` (and of ``pay`` with ``mode`` COPY) into ``out``
    / ``out_pay`` through ``tmp`` / ``tmp_pay`` (every payload array of one dtype: one
    compiled form of each pass per key width and payload width).  Returns the first
    row with a key at or above bit ``check_bits`` (> 0: the key_bits check), or -1."""
    n = keys.shape[1]
    for r in range(lo, hi):
        src, dst = keys[r], out[r]
        src_pay = pay[r] if mode == COPY else pay[0]
        dst_pay = out_pay[r] if mode != NO_PAYLOAD else out_pay[0]
        seen = _count(src, counts, passes, code)
        if check_bits and seen >> np.uint64(check_bits):
            return r
        first = _mapped(src[0], code[0], code[1], code[2], code[3], code[4], code[5], code[6])
        m = 0
        for p in range(passes):
            if counts[p, np.intp((first >> np.uint64(DIGIT_BITS * p)) & np.uint64(RADIX - 1))] != n:
                active[m] = p
                m += 1
        if m == 0:  # every key has the same digits: already in order (loops: a slice
            for i in range(n):  # assignment compiles its shape check's message, seconds)
                dst[i] = src[i]
                if mode == IOTA:
                    dst_pay[i] = i
                elif mode == COPY:
                    dst_pay[i] = src_pay[i]
            continue
        for k in range(m):  # ping-pong through tmp; the last pass writes dst
            to_out = (m - 1 - k) % 2 == 0
            target, target_pay = (dst, dst_pay) if to_out else (tmp, tmp_pay)
            _exclusive(counts, active[k], offsets)
            step = mode if k == 0 else (COPY if mode != NO_PAYLOAD else NO_PAYLOAD)
            _scatter(src, target, src_pay, target_pay, offsets, DIGIT_BITS * active[k], step,
                     write_keys or k < m - 1, code)
            src, src_pay = target, target_pay
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


def payload_view(a: np.ndarray) -> np.ndarray:
    """``a`` (C-contiguous, at most 8 bytes an element) as the unsigned integers of
    its width: the passes move payloads as bits, one compiled form per width."""
    return a.view(np.dtype(f"uint{8 * a.dtype.itemsize}"))


def sort_rows(keys: np.ndarray, code: KeyCode, *, payload: np.ndarray | None = None, argsort: bool = False,
              write_keys: bool = True, threads: int | None = None) -> tuple:
    """Sort each row of ``keys`` (2-D, C-contiguous, ``code.storage`` dtype) stably.

    ``argsort``: the payload is every element's index in its row (int64 result);
    else ``payload`` (2-D like ``keys``, unsigned integers: :func:`payload_view`, or
    None) moves with its key.  Returns ``(sorted keys or None, payload or None)``.
    Raises ValueError (``key_bits``) for a key outside [0, 2**code.key_bits)."""
    rows, n = keys.shape
    mode = IOTA if argsort else (COPY if payload is not None else NO_PAYLOAD)
    if mode == COPY:
        pay_dtype = payload.dtype
    else:  # indices as uint32 while they fit (as a payload of 4 bytes), no payload as a 4-byte dummy
        pay_dtype = np.dtype(np.uint32 if n < (1 << 32) else np.uint64)
    out = np.empty((rows, n), keys.dtype)
    out_pay = np.empty((rows, n) if mode != NO_PAYLOAD else (1, 0), pay_dtype)
    pay = payload if mode == COPY else np.empty((1, 0), pay_dtype)
    passes = code.passes(DIGIT_BITS)
    check = code.key_bits if code.key_bits is not None and code.key_bits < code.width else 0
    params = code_tuple(code)
    threads = THREADS if threads is None else threads
    chunks = min(threads, rows) if rows * n >= THREADED_FROM else 1
    bounds = [rows * t // chunks for t in range(chunks + 1)]

    def job(lo, hi):
        tmp = np.empty(n, keys.dtype)
        tmp_pay = np.empty(n if mode != NO_PAYLOAD else 0, pay_dtype)
        counts = np.zeros((max(passes, 1), RADIX), dtype=np.int64)  # the digits' counts, their offsets,
        offsets = np.zeros(RADIX, dtype=np.int64)  # the passes that move keys
        active = np.zeros(max(passes, 1), dtype=np.int64)
        return call(_sort_rows, keys, out, pay, out_pay, tmp, tmp_pay, counts, offsets, active, lo, hi, passes,
                    mode, write_keys, check, params)

    failed = [r for r in _run_all([lambda lo=lo, hi=hi: job(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:])])
              if r >= 0]
    if failed:
        raise ValueError(f"key_bits={code.key_bits}: x has a key outside [0, 2**{code.key_bits}) (in row "
                         f"{min(failed)} of the sorted rows)")
    if mode == IOTA:
        out_pay = out_pay.astype(np.int64) if pay_dtype == np.uint32 else out_pay.view(np.int64)
    return (out if write_keys else None), (out_pay if mode != NO_PAYLOAD else None)
