"""Higher-order and tuple prefix sums of integers in one pass: thread-contiguous tiles and
one decoupled look-back over the carry vector (Gluon).

What it computes (SAM, Maleki, Yang and Burtscher, PLDI 2016, seed 002): order q is the
sum scan applied q times; tuple size s makes s interleaved scans (element m belongs to
column m mod s).  Each tile reads and writes every element once, whatever q and s.

**Carry as a monoid (why one look-back suffices).**  For one column, a segment of L rows
is summarised by its q local sums t_1..t_q at its last row (order r of the segment alone).
Segment A followed by segment B (L rows) is the segment with
``(A . B)_r = B_r + sum_{p <= r} C(L + r - p - 1, r - p) * A_p``: each order-p value of A is
carried through the r - p further summations over B's L rows (the binomial shift; the
multiset coefficient C(L + k - 1, k) counts them).  The shift is associative, so the
decoupled look-back of Merrill & Garland (seed 003) works on these q x s vectors as on
single sums: a tile publishes its local vector at once (flag A), folds the window's
entries up to the nearest inclusive prefix (flag P) with shifts of whole tiles, and
publishes its inclusive vector.  Coefficients are computed exactly modulo 2^64
(:func:`_coefficients`), which is what integer wrap-around needs; they are why this
kernel takes integer sums only (floats keep the loop over orders, :mod:`.kernels`).

**Thread-contiguous tiles (why Gluon).**  Triton's ``tl.associative_scan`` on the
coalesced layout runs a warp shuffle scan per 16-byte chunk a thread holds, so each order
cost about 5 shuffles per chunk and int64 order 8 ran at 0.37 of copy tile-local (H100,
NOTES.md run h).  Plain Triton cannot give a thread a contiguous run from coalesced loads
(run e); Gluon's explicit layouts can: the tile is loaded coalesced and converted through
shared memory to ``[T, G, S]`` with one row of G x S consecutive elements per thread.
Orders are then serial scans along G in registers (no shuffles), and only the q x S row
sums cross threads (q scans of one [S] vector per thread).  Tile-local, every order and
power-of-two tuple size ran at 1.00 of copy for int32 and int64 (run h, call 1).  Registers
per thread hold G x S = R elements whatever s is (SAM's point against tuple structs).
The tile goes to an explicit shared-memory buffer by asynchronous copies (``cp.async``:
no registers hold it in flight) and is read from there again for the output, so x holds no
registers across the look-back (5 tiles per SM instead of 3; runs j, k).  High orders take
rows twice as long, read in two chunks: half the tiles, so half the look-backs (run k).
A tuple size that is not a power of two is padded to the next one, S: a row holds G whole
tuples in G x S slots, the padding columns zero through every order (and absent from the
status entries: their carries are zero).  At order 1 such tuple sizes take flat tiles
instead (``STRIDED``): rows of R consecutive elements, loaded and stored as for tuple size
1, tuples crossing rows and tiles.  Element i of a row belongs to relative column i mod TS,
a constant per register, so TS masked in-thread scans fold to one add per element; a row's
relative column k is absolute column (phase + k) mod TS (phase: the row's first element's
column), which maps its sums out and its seeds in with TS x S selects per row (H100, run n:
tuple size 5 int32 0.70 -> 0.94 of copy, int64 0.61 -> 0.87; padded rows load 4-byte
elements on 5 of 8 lanes).

Per tile: q - 1 in-thread scans (each order's row end is its last element) and one
in-thread sum give the row sums; q thread scans give each row's carry inside the tile and
the tile's vector; after the look-back each row's carry gets the tile's prefix shifted by
the rows before it, and q in-thread scans write the output, order r's seed added to the
row's first element only (one add per row, not per element; run k).

Status: an entry is ``q * s * WPV`` 64-bit words, each a tag (``epoch * 4 + flag``) and
32 bits of a value (WPV = 2 words for 64-bit values), written by relaxed exchanges and
accepted only when all carry one tag (the protocol of :mod:`.kernels`).  Entries lie a power
of two of words apart, so that a reader loads an entry's words of one order as 16-byte
vectors (run n: int64 order 8 0.67 -> 0.78 of copy, order 5 0.85 -> 0.87).

Under ``TRITON_INTERPRET=1`` the kernel runs as a ``triton.jit`` function with Gluon's
names mapped onto ``triton.language`` and layouts ignored (:class:`_Interpreted`), so its
logic is tested on the CPU like the other kernels.
"""


import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as _gluon_language
from triton.experimental.gluon.language.nvidia.ampere import async_copy as _async_copy

from ...dispatch import interpreter_mode

FLAG_AGGREGATE = tl.constexpr(1)
#: Widest status entry (words) published one word per lane through a shared-memory stash of
#: [T, words] (8 KB at 16 words and 128 threads); wider entries go out from one thread.
STASH_WORDS = tl.constexpr(16)
FLAG_PREFIX = tl.constexpr(2)


class _Interpreted:
    """Gluon's language as the interpreter can run it: ``triton.language`` with layout
    arguments dropped (the interpreter has no threads to lay data over)."""

    BlockedLayout = _gluon_language.BlockedLayout
    SliceLayout = _gluon_language.SliceLayout

    @staticmethod
    def arange(start, end, layout=None):
        return tl.arange(start, end)

    @staticmethod
    def full(shape, value, dtype, layout=None):
        return tl.full(shape, value, dtype)

    @staticmethod
    def convert_layout(value, layout, assert_trivial=False):
        return value

    @staticmethod
    def allocate_shared_memory(element_ty, shape, layout):
        return _InterpretedShared(element_ty, shape)

    @staticmethod
    def thread_barrier():
        return None

    def __getattr__(self, name):
        return getattr(tl, name)


class _InterpretedShared:
    """A shared-memory buffer as the interpreter can run it: the tensor last stored."""

    def __init__(self, element_ty, shape):
        self.value = tl.zeros(shape, element_ty)
        self.shape = [tl.constexpr(d) for d in shape]

    def load(self, layout):
        return self.value

    def store(self, value):
        self.value = value

    def reshape(self, shape):
        return _InterpretedView(self, shape)

    def slice(self, start, length, dim):
        return _InterpretedSlice(self, tl.constexpr(start), tl.constexpr(length), dim)


class _InterpretedView:
    """A reshaped view of an interpreted buffer (stores go to the buffer)."""

    def __init__(self, buffer, shape):
        self.buffer, self.shape = buffer, shape

    def load(self, layout):
        return tl.reshape(self.buffer.value, self.shape)

    def store(self, value):
        self.buffer.value = tl.reshape(value, self.buffer.value.shape)


class _InterpretedSlice:
    """Rows (dim 0) or columns (dim 1) [start, start + length) of an interpreted 2-D buffer
    (``start`` a multiple of ``length``), read and written through a view that splits the
    dimension into parts of ``length``."""

    def __init__(self, buffer, start, length, dim):
        self.buffer, self.start, self.length, self.dim = buffer, start, length, dim

    def _view(self):
        whole = self.buffer.value if self.dim == 1 else tl.trans(self.buffer.value)
        rows, width = whole.shape
        parts = width // self.length
        chunk = tl.arange(0, parts)[None, :, None] == self.start // self.length
        return tl.reshape(whole, [rows, parts, self.length]), chunk

    def load(self, layout):
        whole, chunk = self._view()
        part = tl.sum(tl.where(chunk, whole, 0), 1).to(whole.dtype)
        return part if self.dim == 1 else tl.trans(part)

    def store(self, value):
        whole, chunk = self._view()
        value = value if self.dim == 1 else tl.trans(value)
        merged = tl.reshape(tl.where(chunk, value[:, None, :], whole), [whole.shape[0], whole.shape[1] * whole.shape[2]])
        self.buffer.value = merged if self.dim == 1 else tl.trans(merged)


class _InterpretedAsyncCopy:
    """Ampere's asynchronous copies as the interpreter can run them: a load and a store."""

    @staticmethod
    def async_copy_global_to_shared(smem, pointer, mask=None):
        smem.store(tl.load(pointer) if mask is None else tl.load(pointer, mask=mask, other=0))

    @staticmethod
    def commit_group():
        return None

    @staticmethod
    def wait_group(num_outstanding=0):
        return None


if interpreter_mode():
    gl = _Interpreted()
    async_copy = _InterpretedAsyncCopy()
    jit = triton.jit
else:
    gl = _gluon_language
    async_copy = _async_copy
    jit = gluon.jit


@triton.constexpr_function
def _staged_layout(V, R):
    """Shared layout of a staged tile ([T, R]): rows of R elements swizzled in vectors of V
    so that the 8 threads of a shared-memory phase, each reading a vector of its own row,
    hit 8 different bank groups (a row of 16 vectors would otherwise put them all in one)."""
    chunks = R // V
    return _gluon_language.SwizzledSharedLayout(V, max(1, 8 // chunks), min(8, chunks), [1, 0])


@triton.constexpr_function
def _stash_layout(T, NWP):
    """Shared layout of a [T, NWP] stash of 32-bit words: rows padded by four words (16
    bytes, so that rows stay aligned for vector accesses), which spreads a warp's rows over
    the banks (rows of 2^k words would put them all in one)."""
    return _gluon_language.PaddedSharedLayout.with_identity_for([[NWP, 4]], [T, NWP], [1, 0])


@triton.constexpr_function
def _words_padded(words):
    """Status words per entry rounded up to a power of two."""
    return 1 << (words - 1).bit_length()


@triton.constexpr_function
def _padded_io(S, G, WARPS):
    """Layout of a tile of padded tuples ([T, G, S], S a power of two above the tuple size):
    one element per thread, a warp over consecutive tuples, so that the unmasked lanes of a
    load read consecutive addresses."""
    tuples = min(G, 32 // S)
    return _gluon_language.BlockedLayout([1, 1, 1], [32 // (S * tuples), tuples, S], [WARPS, 1, 1], [2, 1, 0])


@jit
def _padded_offsets(T: tl.constexpr, G: tl.constexpr, S: tl.constexpr, TS: tl.constexpr, layout: tl.constexpr):
    """(offsets, column < TS) in a tile of T rows of G tuples of TS elements, each tuple
    padded to S columns ([T, G, S] in ``layout``)."""
    t = gl.arange(0, T, layout=gl.SliceLayout(1, gl.SliceLayout(2, layout)))
    g = gl.arange(0, G, layout=gl.SliceLayout(0, gl.SliceLayout(2, layout)))
    c = gl.expand_dims(gl.expand_dims(gl.arange(0, S, layout=gl.SliceLayout(0, gl.SliceLayout(1, layout))), 0), 1)
    offs = gl.expand_dims(gl.expand_dims(t * (G * TS), 1), 2) + gl.expand_dims(gl.expand_dims(g * TS, 0), 2) + c
    return offs, c < TS


@jit
def _wrap(column, TS: tl.constexpr):
    """``column`` mod TS for 0 <= column < 2 TS."""
    return gl.where(column >= TS, column - TS, column)


@jit
def _strided_phase(start, T: tl.constexpr, R: tl.constexpr, TS: tl.constexpr, layout: tl.constexpr):
    """Column (mod TS) of each thread's first element in a flat tile of T rows of R
    elements starting at element ``start`` ([T] int32 in ``layout``)."""
    t = gl.arange(0, T, layout=layout)
    return _wrap((start % TS).to(gl.int32) + (t * R) % TS, TS)


@jit
def _strided_scan(x, seeds, TS: tl.constexpr, R: tl.constexpr, layout: tl.constexpr):
    """Stride-TS inclusive sums along each thread's row of ``x`` ([T, R] in ``layout``):
    element i adds the elements i - TS, i - 2 TS, .. of its row, and relative column k =
    i mod TS starts from ``seeds[k]`` ([T]).  A column's mask is a constant per
    register (i is), so the selects and the adds of zeros fold away: the TS masked scans
    cost one add per element in all."""
    i = gl.expand_dims(gl.arange(0, R, layout=gl.SliceLayout(0, layout)), 0)
    k_of = i % TS
    y = x
    for k in gl.static_range(TS):
        xk = gl.where(k_of == k, x, 0)
        xk = gl.where(i == k, xk + gl.expand_dims(seeds[k], 1), xk)
        y = gl.where(k_of == k, gl.associative_scan(xk, 1, _add), y)
    return y


@jit
def _strided_sums(x, TS: tl.constexpr, R: tl.constexpr, layout: tl.constexpr):
    """Sums of each relative column k (elements i = k mod TS) of each thread's row of
    ``x`` ([T, R] in ``layout``): TS tensors of [T]."""
    k_of = gl.expand_dims(gl.arange(0, R, layout=gl.SliceLayout(0, layout)), 0) % TS
    sums = ()
    for k in gl.static_range(TS):
        sums = sums + (gl.reduce(gl.where(k_of == k, x, 0), 1, _add),)
    return sums


@jit
def _to_absolute(relative, phase, ACC: tl.constexpr, T: tl.constexpr, S: tl.constexpr, TS: tl.constexpr,
                 cols: tl.constexpr):
    """A row's TS relative columns (tensors of [T]) as its absolute columns ([T, S] in
    ``cols``): relative column k is absolute column (phase + k) mod TS; padding columns
    zero.  TS x S selects per row."""
    c = gl.expand_dims(gl.arange(0, S, layout=gl.SliceLayout(0, cols)), 0)
    p = gl.convert_layout(phase, gl.SliceLayout(1, cols))
    out = gl.full([T, S], 0, ACC, layout=cols)
    for k in gl.static_range(TS):
        a = gl.expand_dims(_wrap(p + k, TS), 1)
        out = gl.where(c == a, gl.expand_dims(gl.convert_layout(relative[k], gl.SliceLayout(1, cols)), 1), out)
    return out


@jit
def _to_relative(absolute, phase, S: tl.constexpr, TS: tl.constexpr, cols: tl.constexpr, layout: tl.constexpr):
    """:func:`_to_absolute` backwards: TS tensors of [T] in ``layout``."""
    c = gl.expand_dims(gl.arange(0, S, layout=gl.SliceLayout(0, cols)), 0)
    p = gl.convert_layout(phase, gl.SliceLayout(1, cols))
    out = ()
    for k in gl.static_range(TS):
        a = gl.expand_dims(_wrap(p + k, TS), 1)
        out = out + (gl.convert_layout(gl.reduce(gl.where(c == a, absolute, 0), 1, _add), layout),)
    return out


@jit
def _row_pointers(base, start, length, T: tl.constexpr, R: tl.constexpr, layout: tl.constexpr):
    """(pointers, mask) of a partial tile's elements from ``base`` + ``start``, each thread
    its own row of R ([T, R] in ``layout``, a row per thread): the mask compares each
    element's place in its row, a constant per register, with the row's remaining length,
    one register per thread.  Masks of the coalesced layout compare every element's offset
    and, for a length not a multiple of 16 (no vector-wide masks), kept 100-odd offsets live
    from the tile's start to its store (int32 tuple size 5: 408 bytes of spills; run n)."""
    t = gl.arange(0, T, layout=gl.SliceLayout(1, layout))
    i = gl.expand_dims(gl.arange(0, R, layout=gl.SliceLayout(0, layout)), 0)
    rows = gl.expand_dims(t * R, 1)
    return base + start + rows + i, i < gl.expand_dims((length - start - t * R).to(gl.int32), 1)


@jit
def _tile_offsets(T: tl.constexpr, R: tl.constexpr, layout: tl.constexpr):
    """Offsets in a tile of T rows of R elements ([T, R] in ``layout``)."""
    return (gl.expand_dims(gl.arange(0, T, layout=gl.SliceLayout(1, layout)) * R, 1)
            + gl.expand_dims(gl.arange(0, R, layout=gl.SliceLayout(0, layout)), 0))


@jit
def _row_chunk(buf, k: tl.constexpr, flat: tl.constexpr, rows: tl.constexpr, T: tl.constexpr, GC: tl.constexpr,
               S: tl.constexpr, ACC: tl.constexpr):
    """Chunk k of each thread's row in the staged tile: GC x S elements per thread
    ([T, GC, S] in ``rows``; ``flat`` lays [T, GC x S] out as ``rows`` does)."""
    return gl.convert_layout(gl.reshape(buf.slice(k * GC * S, GC * S, 1).load(flat), [T, GC, S]), rows,
                             assert_trivial=True).to(ACC)


@jit
def _seeded_scans(y, seeds, first, last, UPTO: tl.constexpr, Q: tl.constexpr):
    """Orders 1..UPTO of ``y``'s scan along a row (axis 1), order r seeded with ``seeds[r]``
    (the order-r value before the row: it enters the row's first element only, one add
    instead of one per element); returns the last order's scan and every order's value at
    the row's end (picked, not summed: ``first``/``last`` are constants per register, so
    the selects fold away)."""
    ends = ()
    for r in gl.static_range(UPTO):
        y = gl.associative_scan(gl.where(first, y + gl.expand_dims(seeds[r], 1), y), 1, _add)
        ends = ends + (gl.reduce(gl.where(last, y, 0), 1, _add),)
    for r in gl.static_range(UPTO, Q):
        ends = ends + (seeds[r],)
    return y, ends


@jit
def _add(a, b):
    return a + b


@jit
def _odd_factorial_inverse(K: tl.constexpr):
    """The inverse modulo 2^64 of k!'s odd part (1, 1, 3, 3, 15, 45, 315 for k = 1..7)."""
    if K == 3 or K == 4:
        return -6148914691236517205
    elif K == 5:
        return -1229782938247303441
    elif K == 6:
        return 5738987045154082725
    elif K == 7:
        return 3455104445551947763
    else:
        return 1


@jit
def _factorial_twos(K: tl.constexpr):
    """How many times 2 divides k! (k <= 7)."""
    if K >= 6:
        return 4
    elif K >= 4:
        return 3
    elif K >= 2:
        return 1
    else:
        return 0


@jit
def _coefficients(L, Q: tl.constexpr):
    """``(C(L - 1, 0), C(L, 1), .., C(L + Q - 2, Q - 1))`` modulo 2^64 for int64 ``L >= 0``
    (any shape): the binomial shift across L rows.  Exact: C(L + k - 1, k) is the product
    L (L + 1) .. (L + k - 1) over k!; the factors' odd parts are multiplied (wrapping),
    their powers of two counted, and k! divided out as the inverse of its odd part and a
    shift (k! divides the product, so the count covers k!'s twos)."""
    nonzero = L != 0
    base = gl.where(nonzero, L, 1)
    one = base * 0 + 1
    out = (one,)
    odd = one
    twos = base * 0
    for i in gl.static_range(Q - 1):
        f = base + i
        lowest = f & (0 - f)  # 2^(trailing zeros), exact as a double
        e = (lowest.to(gl.float64).to(gl.int64, bitcast=True) >> 52) - 1023
        odd = odd * (f >> e)
        twos = twos + e
        shift = twos - _factorial_twos(i + 1)
        c = (odd * _odd_factorial_inverse(i + 1)) << gl.minimum(shift, 63)
        out = out + (gl.where(nonzero & (shift < 64), c, 0),)
    return out


@jit
def _thread_scan(values, flat: tl.constexpr, cols: tl.constexpr):
    """Inclusive sum over threads of a [T, S] tensor (one row per thread); Triton scans
    blocked layouts only, and ``flat`` lays rows out as ``cols`` does (no data moves)."""
    return gl.convert_layout(gl.associative_scan(gl.convert_layout(values, flat), 0, _add), cols)


@jit
def _publish(entry_ptr, values, col, last_thread, stash, tag, publishes, Q: tl.constexpr, TS: tl.constexpr,
             WPV: tl.constexpr, T: tl.constexpr, WARPS: tl.constexpr):
    """Write the q vectors ``values`` ([T, S] each) of the last thread (``last_thread``) as
    tagged words at ``entry_ptr`` (columns below TS only: padding columns are zero), one word
    per lane: every thread puts its words in a row of ``stash`` and the lanes of one
    instruction take the last row's, so an entry's words go out in one request per line, not one atomic
    after another from one thread (H100, run k: int64 order 8 0.61 -> 0.67 of copy).
    Entries too wide for a stash (``stash`` None) go out from the last thread."""
    if stash is None:
        for r in gl.static_range(Q):
            v = values[r].to(gl.int64)
            for h in gl.static_range(WPV):
                bits = (v >> (32 * h)) & 0xFFFFFFFF
                gl.atomic_xchg(entry_ptr + (r * TS + col) * WPV + h, tag | bits,
                               mask=last_thread & (col < TS) & publishes, sem="relaxed")
    else:
        _publish_lanes(entry_ptr, values, col, stash, tag, publishes, Q, TS, WPV, T, WARPS)


@jit
def _publish_lanes(entry_ptr, values, col, stash, tag, publishes, Q: tl.constexpr, TS: tl.constexpr,
                   WPV: tl.constexpr, T: tl.constexpr, WARPS: tl.constexpr):
    """:func:`_publish` through ``stash``."""
    NWP: tl.constexpr = stash.shape[1]
    rows: tl.constexpr = gl.BlockedLayout([1, NWP], [32, 1], [WARPS, 1], [1, 0])
    at = gl.expand_dims(gl.arange(0, NWP, layout=gl.SliceLayout(0, rows)), 0)
    words = gl.full([T, NWP], 0, gl.int32, layout=rows)
    for r in gl.static_range(Q):
        v = values[r].to(gl.int64)
        for c in gl.static_range(TS):
            vc = gl.convert_layout(gl.reduce(gl.where(col == c, v, 0), 1, _add), gl.SliceLayout(1, rows))
            for h in gl.static_range(WPV):
                bits = (gl.expand_dims(vc, 1) >> (32 * h)).to(gl.int32)
                words = gl.where(at == (r * TS + c) * WPV + h, bits, words)
    gl.thread_barrier()  # the stash's last readers are done
    stash.store(words)
    gl.thread_barrier()
    lanes: tl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [1, WARPS], [1, 0])
    last = stash.slice(T - 1, 1, 0).load(lanes)
    word = gl.expand_dims(gl.arange(0, NWP, layout=gl.SliceLayout(0, lanes)), 0)
    gl.atomic_xchg(entry_ptr + word, tag | (last.to(gl.int64) & 0xFFFFFFFF), mask=(word < Q * TS * WPV) & publishes,
                   sem="relaxed")


@jit
def _shift_into(base, values, coefs, r: tl.constexpr, UPTO: tl.constexpr):
    """``base + sum_{p < UPTO} coefs[r - p] * values[p]``: order r of the binomial shift of
    ``values`` (coefficients from :func:`_coefficients`, in the values' dtype and
    broadcastable to them) added to ``base``.  UPTO = r + 1 shifts every order; UPTO = r
    leaves order r itself out (coefs[0] is 1)."""
    out = base
    for p in gl.static_range(UPTO):
        out = out + coefs[r - p] * values[p]
    return out


@jit
def _cast(coefs, ACC: tl.constexpr, AXIS: tl.constexpr):
    """Coefficients in the accumulator dtype, with a unit axis at AXIS (-1: none)."""
    out = ()
    for k in gl.static_range(len(coefs)):
        c = coefs[k].to(ACC)
        if AXIS >= 0:
            c = gl.expand_dims(c, AXIS)
        out = out + (c,)
    return out


@jit
def _fold_extent(state, j, WINDOW: tl.constexpr):
    """(whether the window holds the prefix to stop at, how many entries fold): entries
    up to the nearest inclusive prefix if no entry before it is not ready, else the
    entries before the first one not ready.  One reduction (a cross-warp one costs two
    barriers): the first entry that is not an aggregate, coded 2j for a prefix and 2j + 1
    for an entry not ready (2 x WINDOW + 1 if every entry is an aggregate: fold them all)."""
    code = gl.where(state == FLAG_PREFIX, 2 * j, gl.where(state == FLAG_AGGREGATE, 2 * WINDOW + 1, 2 * j + 1))
    first = gl.min(code, 0)
    found = (first & 1) == 0
    return found, first // 2 + found.to(first.dtype)


@jit
def _take_word(value, lo, hi, word, real, h: tl.constexpr):
    """Word ``h`` of each value ([WINDOW, S] int64 words, tag above its 32 bits): its bits
    into ``value``, its tag into each entry's lowest and highest tag (real columns only)."""
    tag = (word >> 32).to(gl.int32)
    lo = gl.minimum(lo, gl.min(gl.where(real, tag, 2147483647), 1))
    hi = gl.maximum(hi, gl.max(gl.where(real, tag, -2147483648), 1))
    return value | gl.where(real, (word & 0xFFFFFFFF) << (32 * h), 0), lo, hi


@jit
def _fetch_vectors(status_ptr, tile, wanted, ES: tl.constexpr, Q: tl.constexpr, S: tl.constexpr, TS: tl.constexpr,
                   WPV: tl.constexpr, WINDOW: tl.constexpr, win: tl.constexpr, reads: tl.constexpr):
    """An entry's words of each order, read as 16-byte vectors (entries ES words apart, ES a
    power of two, so that they stay aligned; S x WPV words per order, those past TS x WPV
    read and ignored; ``reads`` lays out [WINDOW, S x WPV] words as ``win`` lays out
    entries): (q values of [WINDOW, S] as int64, lowest tag, highest tag of each entry)."""
    col = gl.arange(0, S, layout=gl.SliceLayout(0, win))
    real = gl.expand_dims(col < TS, 0)
    words_at = gl.expand_dims(gl.arange(0, S * WPV, layout=gl.SliceLayout(0, reads)), 0)
    ptrs = status_ptr + gl.expand_dims(gl.convert_layout(tile, gl.SliceLayout(1, reads)) * ES, 1) + words_at
    fetch = gl.expand_dims(gl.convert_layout(wanted, gl.SliceLayout(1, reads)), 1)
    lo = gl.full([WINDOW], 2147483647, gl.int32, layout=gl.SliceLayout(1, win))
    hi = gl.full([WINDOW], -2147483648, gl.int32, layout=gl.SliceLayout(1, win))
    vals = ()
    for r in gl.static_range(Q):
        w = gl.load(ptrs + r * TS * WPV, mask=fetch, other=0, volatile=True)
        if WPV == 2:
            halves = gl.split(gl.reshape(w, [WINDOW, S, 2]))
        else:
            halves = (w,)
        value = gl.full([WINDOW, S], 0, gl.int64, layout=win)
        for h in gl.static_range(WPV):
            value, lo, hi = _take_word(value, lo, hi, gl.convert_layout(halves[h], win), real, h)
        vals = vals + (value,)
    return vals, lo, hi


@jit
def _fetch_words(status_ptr, tile, wanted, ES: tl.constexpr, Q: tl.constexpr, S: tl.constexpr, TS: tl.constexpr,
                 WPV: tl.constexpr, WINDOW: tl.constexpr, win: tl.constexpr):
    """:func:`_fetch_vectors` one 8-byte word at a time (only the TS x WPV real words)."""
    col = gl.arange(0, S, layout=gl.SliceLayout(0, win))
    real = gl.expand_dims(col < TS, 0)
    ptrs = status_ptr + gl.expand_dims(tile * ES, 1) + gl.expand_dims(col * WPV, 0)
    mask = gl.expand_dims(wanted, 1) & real
    lo = gl.full([WINDOW], 2147483647, gl.int32, layout=gl.SliceLayout(1, win))
    hi = gl.full([WINDOW], -2147483648, gl.int32, layout=gl.SliceLayout(1, win))
    vals = ()
    for r in gl.static_range(Q):
        value = gl.full([WINDOW, S], 0, gl.int64, layout=win)
        for h in gl.static_range(WPV):
            w = gl.load(ptrs + (r * TS * WPV + h), mask=mask, other=0, volatile=True)
            value, lo, hi = _take_word(value, lo, hi, w, real, h)
        vals = vals + (value,)
    return vals, lo, hi


@jit
def _lookback(status_ptr, vid, epoch, ACC: tl.constexpr, Q: tl.constexpr, S: tl.constexpr, TS: tl.constexpr,
              WPV: tl.constexpr, ES: tl.constexpr, ROWS: tl.constexpr, WINDOW: tl.constexpr, win3: tl.constexpr,
              reads: tl.constexpr, VECTORS: tl.constexpr):
    """The carry vector before tile ``vid`` (q tensors of [S]).

    Each step reads a window of WINDOW entries, nearest first, in two round trips: a
    probe of each entry's first word (its state: how far the fold can go: up to the
    nearest inclusive prefix, or up to the first entry not ready) and then every word of
    the entries worth folding.  An entry of q x TS x WPV words would otherwise shrink the
    window to a few entries per step (H100, run h, call 4: int64 tuple size 8 at 0.33 of
    copy, 0.91 without the look-back).  The fetched words decide (one tag in all of an
    entry's words); the probe only limits what is read.  ``win3`` ([WINDOW, QP, S], QP
    the orders rounded up to a power of two) holds an entry's S columns of every order in
    one thread and spreads the window's entries over WIN_WARPS warps (one entry per lane;
    run j: wider windows beat one warp's despite reductions across warps).  Entries' words
    are read as 16-byte vectors (``VECTORS``, :func:`_fetch_vectors`) or one word at a time
    (launch.blocked_reader chooses, from run n's measurements), and the window's orders
    are summed in one reduction across warps (one pair of barriers per step instead of one
    per order; run n: never slower, int64 order 8 0.78 against 0.76)."""
    QP: tl.constexpr = _words_padded(Q)
    win: tl.constexpr = gl.SliceLayout(1, win3)  # [WINDOW, S]
    j = gl.arange(0, WINDOW, layout=gl.SliceLayout(1, win))
    order_at = gl.expand_dims(gl.expand_dims(gl.arange(0, QP, layout=gl.SliceLayout(0, gl.SliceLayout(2, win3))), 0), 2)
    picks = gl.expand_dims(gl.arange(0, QP, layout=gl.SliceLayout(1, gl.SliceLayout(0, win3))), 1)
    # Shifts of the window's entries (j tiles between entry j and the window's end).
    cj = _cast(_coefficients(j.to(gl.int64) * ROWS, Q), ACC, 1)
    acc = ()
    for r in gl.static_range(Q):
        acc = acc + (gl.full([S], 0, ACC, layout=gl.SliceLayout(0, win)),)
    folded = vid * 0  # tiles folded so far (int64)
    done = vid <= 0
    while not done:
        tile = vid - 1 - folded - j
        valid = tile >= 0
        probe = (gl.load(status_ptr + tile * ES, mask=valid, other=0, volatile=True) >> 32).to(gl.int32)
        seen = gl.where(valid & ((probe >> 2) == epoch), probe & 3, 0)
        _, extent = _fold_extent(seen, j, WINDOW)
        wanted = j < extent
        if VECTORS:
            words, lo, hi = _fetch_vectors(status_ptr, tile, wanted, ES, Q, S, TS, WPV, WINDOW, win, reads)
        else:
            words, lo, hi = _fetch_words(status_ptr, tile, wanted, ES, Q, S, TS, WPV, WINDOW, win)
        vals = ()
        for r in gl.static_range(Q):
            vals = vals + (words[r].to(ACC),)
        state = gl.where(wanted & (lo == hi) & ((lo >> 2) == epoch), lo & 3, 0)
        done, limit = _fold_extent(state, j, WINDOW)
        take = gl.expand_dims(j < limit, 1)
        # The window's orders, shifted to its end, stacked on axis 1 and summed at once.
        stacked = gl.full([WINDOW, QP, S], 0, ACC, layout=win3)
        for r in gl.static_range(Q):
            shifted = gl.where(take, _shift_into(vals[r], vals, cj, r, r), 0)
            stacked = gl.where(order_at == r, gl.expand_dims(shifted, 1), stacked)
        summed = gl.reduce(stacked, 0, _add)  # [QP, S], each thread all of them
        part = ()
        for r in gl.static_range(Q):
            picked = gl.reduce(gl.where(picks == r, summed, 0), 0, _add)
            part = part + (gl.convert_layout(picked, gl.SliceLayout(0, win)),)
        cm = _cast(_coefficients(folded * ROWS, Q), ACC, -1)  # this window lies before the folded tiles
        total = ()
        for r in gl.static_range(Q):
            total = total + (_shift_into(acc[r], part, cm, r, r + 1),)
        acc = total
        folded = folded + limit
    return acc


@jit(do_not_specialize=["tile_base", "epoch", "lookback"])
def orders_kernel(x_ptr, y_ptr, status_ptr, counter_ptr, length, tiles, tile_base, epoch, lookback,
                  ACC: tl.constexpr, Q: tl.constexpr, S: tl.constexpr, R: tl.constexpr, V: tl.constexpr,
                  TS: tl.constexpr, WARPS: tl.constexpr, WINDOW: tl.constexpr, WIN_WARPS: tl.constexpr,
                  WPV: tl.constexpr, CH: tl.constexpr, PREFIXES: tl.constexpr, VECTORS: tl.constexpr,
                  STRIDED: tl.constexpr):
    """Order Q, tuple size TS inclusive sums of ``length`` elements; each tuple padded to S
    columns (TS itself if a power of two; S divides R), a thread's row of R slots holds G =
    R / S tuples, a tile 32 * WARPS * G tuples; ``tiles`` tiles, ids from ``counter_ptr``
    minus ``tile_base``; V elements per 16-byte vector.  ``PREFIXES=False`` (tests only)
    publishes no inclusive prefix but tile 0's, so every look-back folds aggregates
    through windows down to tile 0: the interpreter runs tiles in order and would
    otherwise only ever fold one inclusive predecessor.  ``lookback=0`` (studies
    only: wrong results) takes every tile's prefix as zero, to time the rest."""
    T: tl.constexpr = 32 * WARPS
    G: tl.constexpr = R // S
    BLOCK: tl.constexpr = T * R if STRIDED else T * G * TS
    ROWS: tl.constexpr = T * G
    PADDED: tl.constexpr = TS < S and not STRIDED
    NW: tl.constexpr = Q * TS * WPV  # status words per entry
    ES: tl.constexpr = _words_padded(NW)  # entries' spacing (aligned for vector reads)
    io: tl.constexpr = gl.BlockedLayout([1, V], [32 * V // R, R // V], [WARPS, 1], [1, 0])  # coalesced
    GC: tl.constexpr = G // CH  # tuples of a row chunk
    chunk: tl.constexpr = gl.BlockedLayout([1, GC * S], [32, 1], [WARPS, 1], [1, 0])  # a row chunk per thread
    rows: tl.constexpr = gl.BlockedLayout([1, GC, S], [32, 1, 1], [WARPS, 1, 1], [2, 1, 0])
    cols: tl.constexpr = gl.SliceLayout(1, rows)  # [T, S]: a thread's columns
    flat_cols: tl.constexpr = gl.BlockedLayout([1, S], [32, 1], [WARPS, 1], [1, 0])
    flat_rows: tl.constexpr = gl.BlockedLayout([1, R], [32, 1], [WARPS, 1], [1, 0])  # a partial tile's rows
    # See _lookback: the window's entries, orders and columns, and the words read.
    win3: tl.constexpr = gl.BlockedLayout([1, _words_padded(Q), S], [32, 1, 1], [WIN_WARPS, 1, WARPS // WIN_WARPS],
                                          [2, 1, 0])
    reads: tl.constexpr = gl.BlockedLayout([1, S * WPV], [32, 1], [WIN_WARPS, WARPS // WIN_WARPS], [1, 0])

    if tiles == 1:
        vid = gl.program_id(0).to(gl.int64)
    else:
        vid = gl.atomic_add(counter_ptr, 1, sem="relaxed") - tile_base
    start = vid * BLOCK
    offs = _tile_offsets(T, R, io)
    full = start + BLOCK <= length
    # The tile goes through shared memory (coalesced in, a row per thread out) and is read
    # from there again for the output, so that x holds no registers across the look-back.
    buf = gl.allocate_shared_memory(x_ptr.dtype.element_ty, [T, R], _staged_layout(V, R))
    if PADDED:
        # Tuples of TS elements land in rows of S columns; the padding columns stay zero.
        io3: tl.constexpr = _padded_io(S, G, WARPS)
        offs3, real = _padded_offsets(T, G, S, TS, io3)
        # (Written out here: through a helper's mask argument ptxas kept 28 registers more,
        # int32 tuple size 5 166 -> 194, the column masks no longer folding per register.)
        if full:
            buf.reshape([T, G, S]).store(gl.load(x_ptr + start + offs3, mask=real, other=0))
        else:
            buf.reshape([T, G, S]).store(gl.load(x_ptr + start + offs3, mask=real & (offs3 < length - start), other=0))
    elif full:
        async_copy.async_copy_global_to_shared(buf, x_ptr + start + offs)
    else:
        ptrs, inside = _row_pointers(x_ptr, start, length, T, R, flat_rows)
        buf.store(gl.load(ptrs, mask=inside, other=0))
    async_copy.commit_group()
    async_copy.wait_group(0)
    gl.thread_barrier()

    if STRIDED:
        # A flat row of R elements (order 1): its relative columns' sums, then absolute ones.
        gl.static_assert(Q == 1 and CH == 1, "strided tiles take order 1 in one chunk")
        phase = _strided_phase(start, T, R, TS, gl.SliceLayout(1, chunk))
        sums = (_to_absolute(_strided_sums(buf.load(chunk).to(ACC), TS, R, chunk), phase, ACC, T, S, TS, cols),)
    else:
        # Row sums of orders 1..Q, chunk by chunk (a chunk's registers only): orders 1..Q-1 are
        # the ends of the row's scans, order Q the sum of order Q - 1's.
        g = gl.expand_dims(gl.expand_dims(gl.arange(0, GC, layout=gl.SliceLayout(0, gl.SliceLayout(2, rows))), 0), 2)
        first = g == 0
        last = g == GC - 1
        sums = ()
        for r in gl.static_range(Q):
            sums = sums + (gl.full([T, S], 0, ACC, layout=cols),)
        for k in gl.static_range(CH):
            y, ends = _seeded_scans(_row_chunk(buf, k, chunk, rows, T, GC, S, ACC), sums, first, last, Q - 1, Q)
            sums = ()
            for r in gl.static_range(Q - 1):
                sums = sums + (ends[r],)
            sums = sums + (ends[Q - 1] + gl.reduce(y, 1, _add),)

    # Each row's carry inside the tile (exclusive over threads), order by order: a row's
    # order-r vector, shifted across its G rows, enters the next row's.
    cg = _cast(_coefficients(vid * 0 + G, Q), ACC, -1)
    excl = ()
    incl = ()
    for r in gl.static_range(Q):
        term = _shift_into(sums[r], excl, cg, r, r)
        scanned = _thread_scan(term, flat_cols, cols)
        excl = excl + (scanned - term,)
        incl = incl + (scanned,)

    thread = gl.arange(0, T, layout=gl.SliceLayout(1, cols))
    col = gl.expand_dims(thread * 0, 1) + gl.expand_dims(gl.arange(0, S, layout=gl.SliceLayout(0, cols)), 0)
    last_thread = gl.expand_dims(thread == T - 1, 1)
    publishes = vid < tiles - 1
    if NW <= STASH_WORDS:
        stash = gl.allocate_shared_memory(gl.int32, [T, _words_padded(NW)], _stash_layout(T, _words_padded(NW)))
    else:
        stash = None
    # Tile 0's aggregate is its inclusive prefix.
    flag = gl.where(vid == 0, FLAG_PREFIX, FLAG_AGGREGATE)
    _publish(status_ptr + vid * ES, incl, col, last_thread, stash, (epoch * 4 + flag).to(gl.int64) << 32, publishes,
             Q, TS, WPV, T, WARPS)

    prefix = _lookback(status_ptr, vid * lookback, epoch, ACC, Q, S, TS, WPV, ES, ROWS, WINDOW, win3, reads, VECTORS)
    carried = ()
    for r in gl.static_range(Q):
        carried = carried + (gl.expand_dims(gl.convert_layout(prefix[r], gl.SliceLayout(0, cols)), 0),)
    if vid > 0 and PREFIXES:
        ct = _cast(_coefficients(vid * 0 + ROWS, Q), ACC, -1)
        inclusive = ()
        for r in gl.static_range(Q):
            inclusive = inclusive + (_shift_into(incl[r], carried, ct, r, r + 1),)
        _publish(status_ptr + vid * ES, inclusive, col, last_thread, stash,
                 (epoch * 4 + FLAG_PREFIX).to(gl.int64) << 32, publishes, Q, TS, WPV, T, WARPS)

    # Seeds: each row's carry plus the tile's prefix shifted across the rows before it.
    cv = _cast(_coefficients(thread.to(gl.int64) * G, Q), ACC, 1)
    seeds = ()
    for r in gl.static_range(Q):
        seeds = seeds + (_shift_into(excl[r], carried, cv, r, r + 1),)
    # The output goes back to coalesced through the tile's buffer, chunk by chunk (each
    # thread overwrites only the row it read), or through a buffer of its own dtype.
    if y_ptr.dtype.element_ty == x_ptr.dtype.element_ty:
        out_buf = buf
    else:
        out_buf = gl.allocate_shared_memory(y_ptr.dtype.element_ty, [T, R], _staged_layout(V, R))
    if STRIDED:
        y = _strided_scan(buf.load(chunk).to(ACC), _to_relative(seeds[0], phase, S, TS, cols, gl.SliceLayout(1, chunk)),
                          TS, R, chunk)
        out_buf.store(y.to(y_ptr.dtype.element_ty))
    else:
        for k in gl.static_range(CH):
            y, seeds = _seeded_scans(_row_chunk(buf, k, chunk, rows, T, GC, S, ACC), seeds, first, last, Q, Q)
            y = gl.convert_layout(gl.reshape(y, [T, GC * S]), chunk, assert_trivial=True)
            out_buf.slice(k * GC * S, GC * S, 1).store(y.to(y_ptr.dtype.element_ty))
    gl.thread_barrier()
    if PADDED:
        out = out_buf.reshape([T, G, S]).load(io3)
        offs3, real = _padded_offsets(T, G, S, TS, io3)  # again: not held across the look-back
        if full:
            gl.store(y_ptr + start + offs3, out, mask=real)
        else:
            gl.store(y_ptr + start + offs3, out, mask=real & (offs3 < length - start))
    elif full:
        gl.store(y_ptr + start + offs, out_buf.load(io))
    else:
        ptrs, inside = _row_pointers(y_ptr, start, length, T, R, flat_rows)
        gl.store(ptrs, out_buf.load(flat_rows), mask=inside)
