"""The engine's host side: status buffers, epochs and the tile counter, per device and stream.

The decoupled look-back (Merrill & Garland 2016, section 4) needs a status entry
per tile and a tile counter.  They live per (device, stream) and are reused
across calls: each launch bumps an epoch that its entries' tags carry (``epoch *
4 + flag``) and advances the tile counter by its grid size, so no memset is
needed between calls; a word left by an earlier call reads as not ready
(docs/design/status-words.md).  Launches on one stream run in order, so they
may share one set of buffers; a lock per state keeps the launches of several host threads
on one stream in the order of their tile bases (each is reserved, enqueued and counted
before the next is reserved).

Only a launch that returned counts its tiles as issued; one that raised resets
the counter (:meth:`DeviceState.launch_failed`), so that a failed call leaves
the next one working.

Under CUDA graph capture the launch arguments (epoch, tile base) are frozen into
the graph, so a shared, advancing state would be wrong from the first replay on.
A captured launch gets a one-shot state instead: its counter and status buffers are
allocated, zeroed, inside the capture, so that every replay zeroes them again and
runs at epoch 1 from tile 0 (the memset CUB issues before each look-back scan).
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from typing import NamedTuple

from ....caches import register_cache

__all__ = ["DeviceState", "Status", "single_pass", "Reservation", "state_for", "identity_tensor",
           "status_words", "window_entries", "EPOCH_LIMIT", "MAX_STATUS_WORDS"]

EPOCH_LIMIT = 1 << 29  # tags hold epoch * 4 + state in 32 bits

#: Most tagged words per status entry (the kernels' WORDS): wider values (four
#: 64-bit fields and up) use a flag and value arrays, so that a look-back step does
#: not issue a window of atomics per word.
MAX_STATUS_WORDS = 4


@dataclass
class DeviceState:
    device: object
    counter: object = None  # int64[1]: tiles handed out so far
    tiles_issued: int = 0
    epoch: int = 0
    status: object = None  # int64 tagged words (kernels: WORDS > 0)
    flags: object = None  # int32 flags (WORDS == 0)
    values: dict = field(default_factory=dict)  # (field, dtype) -> (agg, incl)
    allocations: int = 0  # buffers allocated so far: a planned relaunch keeps their addresses until it changes
    # Held from a launch's reservation (renew) to its count (issued, launch_failed, cancel):
    # launches from several threads on one stream enqueue in the order of their tile bases.
    # Reentrant: a thread's nested reservation is its own affair, as it was before.
    lock: object = field(default_factory=threading.RLock, repr=False, compare=False)

    def begin(self, entries: int, accs, words: int):
        """Reserve status for ``entries`` entries of ``words`` tagged words each (0: a
        flag and one value per field of torch dtypes ``accs``); returns (status,
        flags, aggs, incls), the last two tuples of one value buffer per field
        (unused with words)."""
        import torch

        if self.counter is None:
            self.counter = torch.zeros(1, dtype=torch.int64, device=self.device)
            self.allocations += 1
        self.epoch += 1
        if self.epoch >= EPOCH_LIMIT:  # wrap: clear so old words cannot match
            self.epoch = 1
            for buf in (self.status, self.flags):
                if buf is not None:
                    buf.zero_()
        if words:
            if self.status is None or self.status.numel() < entries * words:
                self.status = torch.zeros(_grow(entries * words), dtype=torch.int64, device=self.device)
                self.allocations += 1
            return self.status, self.status, (self.status,), (self.status,)
        if self.flags is None or self.flags.numel() < entries:
            self.flags = torch.zeros(_grow(entries), dtype=torch.int32, device=self.device)
            self.allocations += 1
        aggs, incls = [], []
        for index, acc in enumerate(accs):
            vals = self.values.get((index, acc))
            if vals is None or vals[0].numel() < entries:
                n = _grow(entries)
                vals = (torch.empty(n, dtype=acc, device=self.device), torch.empty(n, dtype=acc, device=self.device))
                self.values[(index, acc)] = vals
                self.allocations += 1
            aggs.append(vals[0])
            incls.append(vals[1])
        return self.flags, self.flags, tuple(aggs), tuple(incls)

    def renew(self, tiles: int, entries: int, accs, words: int, limit: int | None = None):
        """The status of one launch of ``tiles`` tiles on this state (``entries`` entries,
        as :meth:`begin`): ``(buffers, tile base, epoch)``, the buffers :meth:`begin`'s,
        reserved under the state's lock, which stays held: the launcher then calls
        :meth:`issued` once it launched, :meth:`launch_failed` if the launch raised,
        :meth:`cancel` if it launched nothing, each of which releases it
        (:func:`single_pass` does that for a block; a planned replay that keeps its state
        calls them itself).  ``limit``: the largest tile base plus ``tiles`` the launch's
        kernel takes (one that takes the base as a 32-bit argument); past it the count
        starts again from 0 (:meth:`rebase`), and a launch of more tiles than that gets
        None, nothing reserved, the lock not held."""
        if limit is not None and tiles > limit:
            return None
        self.lock.acquire()
        try:
            if limit is not None and self.tiles_issued + tiles > limit:
                self.rebase()
            return self.begin(entries, accs, words), self.tiles_issued, self.epoch
        except BaseException:
            self.lock.release()
            raise

    def issued(self, tiles: int) -> None:
        """A launch of ``tiles`` tiles reserved by :meth:`renew` was made: the next tile
        base is past them."""
        self.tiles_issued += tiles
        self.lock.release()

    def cancel(self) -> None:
        """A reservation of :meth:`renew` that launched nothing: nothing counted (the
        epoch it took is skipped)."""
        self.lock.release()

    def launch_failed(self) -> None:
        """A launch reserved by :meth:`begin` raised instead of returning.  Its tiles
        may have taken tile ids from the counter (the interpreter raises part-way
        through the grid; a GPU launch enqueued before a Python exception takes them
        all later), and it did not count them in ``tiles_issued``: the counter no
        longer matches the tile base, and the next launch's first tile would wait
        for a predecessor that never comes.  The counter is zeroed, in stream order
        after that launch, and the count starts again from 0.  The epoch is not
        taken back: the failed launch may have published words of its epoch, which
        the next launch (one epoch on) reads as not ready."""
        try:
            self.rebase()
        finally:
            self.lock.release()

    def rebase(self) -> None:
        """Start the tile count again from 0: the counter zeroed, in stream order after
        the launches before (which have taken their ids by the time the next launch
        takes its own), and the next tile base 0.  Status words of earlier epochs do not
        match the next launch's."""
        if self.counter is not None:
            self.counter.zero_()
        self.tiles_issued = 0


def _grow(n: int) -> int:
    return 1 << max(10, math.ceil(math.log2(max(n, 1))))


_states: dict = {}
register_cache("prefixscan.backends.triton.engine.state.states", _states.clear)


def state_for(device, stream: int) -> DeviceState:
    """Status buffers of one (device, stream): launches on it are ordered.  During
    CUDA graph capture, a fresh state whose buffers the graph zeroes at each replay."""
    if _capturing(device):
        return DeviceState(device)
    key = (device, stream)
    state = _states.get(key)
    if state is None:
        state = _states[key] = DeviceState(device)
    return state


def _capturing(device) -> bool:
    if getattr(device, "type", None) != "cuda":  # the interpreter's CPU tensors
        return False
    import torch  # optional dependency: only scans of torch tensors reach here

    return torch.cuda.is_current_stream_capturing()


_identities: dict = {}
register_cache("prefixscan.backends.triton.engine.state.identities", _identities.clear)


def identity_tensor(value, dtype, device):
    """The identity as a one-element device tensor, made once (no copy per call).
    Keyed by ``repr(value)`` too: -0.0 (the identity of float sums) equals 0.0."""
    key = (value, repr(value), dtype, device)
    t = _identities.get(key)
    if t is None:
        import torch

        t = _identities[key] = torch.tensor([value], dtype=dtype, device=device)
    return t


def status_words(accs, packed: bool | None) -> int:
    """Tagged 64-bit words per status entry for fields ``accs`` (torch dtypes): one
    per 32 bits of each field; 0 for the flag protocol (``packed`` False, or more
    than :data:`MAX_STATUS_WORDS` words with ``packed`` None)."""
    words = sum(2 if a.itemsize == 8 else 1 for a in accs)
    if packed is False or (packed is None and words > MAX_STATUS_WORDS):
        return 0
    return words


def window_entries(window: int, per_entry: int) -> int:
    """Status entries a look-back step reads, for a ``window`` of status words (or
    rows) and ``per_entry`` of them per entry: ``window // per_entry`` rounded down to a
    power of two (the look-back's ``tl.arange``), at least 2.  Three-word entries
    (12-byte structs) under a 32-word window read 8 entries, not 10."""
    entries = max(2, window // max(per_entry, 1))
    return 1 << (entries.bit_length() - 1)


class Status(NamedTuple):
    """What one single-pass launch hands the engine's device functions: ``buffers`` the
    kernels' ``status`` tuple (words, flags, aggregates, inclusive prefixes), the tile
    ``counter``, this launch's ``tile_base`` and ``epoch``; ``state`` the
    :class:`DeviceState` they come from (None for a single-tile launch), which a planned
    replay renews (under CUDA graph capture, a one-shot state of its own)."""

    buffers: tuple
    counter: object
    tile_base: int
    epoch: int
    state: object = None


def single_pass(device, stream: int, tiles: int, entries: int, accs, words: int, *,
                single: bool = False, placeholder=None, limit: int | None = None) -> "Reservation | None":
    """Reserve the status of one launch of ``tiles`` tiles (``entries`` status entries of
    ``words`` words, or flags and values of torch dtypes ``accs``) on ``device`` and
    ``stream``, for the block that launches it (``with single_pass(...) as status:``).
    The status is reserved when the block starts (:meth:`DeviceState.renew`, under the
    state's lock until the block ends: another thread's launch on the stream waits, its
    tiles to be enqueued after these, from the next tile base).  The tiles count as issued only when the block
    returns; a block that raises resets the counter (:meth:`DeviceState.launch_failed`).
    ``single``: one tile per lane, no look-back, no status: every buffer is
    ``placeholder`` (a small tensor of the launch).  ``limit``: as
    :meth:`DeviceState.renew`'s (None, nothing reserved, for a launch of more tiles than
    it)."""
    if single:
        return Reservation(None, Status((placeholder, placeholder, (placeholder,) * len(accs),
                                         (placeholder,) * len(accs)), placeholder, 0, 0))
    if limit is not None and tiles > limit:
        return None
    return Reservation(state_for(device, stream), (tiles, entries, accs, words, limit))


class Reservation:
    """What :func:`single_pass` returns: a context manager whose block launches with the
    status it reserves (a class, not a generator's context manager: this runs on every
    launch, and a generator costs microseconds more)."""

    __slots__ = ("state", "request", "tiles")

    def __init__(self, state, request):
        self.state, self.request = state, request  # request: the Status itself when state is None

    def __enter__(self) -> Status:
        state = self.state
        if state is None:
            return self.request
        tiles, entries, accs, words, limit = self.request
        buffers, base, epoch = state.renew(tiles, entries, accs, words, limit)  # (single_pass checked the limit)
        self.tiles = tiles
        return Status(buffers, state.counter, base, epoch, state)

    def __exit__(self, kind, value, traceback) -> bool:
        state = self.state
        if state is not None:
            if kind is not None:
                state.launch_failed()
            else:
                state.issued(self.tiles)
        return False  # an exception goes on
