"""The planned replay's launch of a loaded shipped variant, at the cost of Triton's.

A repeated call of one signature (``prefixscan.Scan``'s planned replay) relaunches the
same variant with the same grid and every parameter but the input and output pointers
and, over several tiles, the status reservation, tile base and epoch.  Triton's planned
replay (:class:`..runtime.replay.Relaunch`) does that through its compiled C launcher;
the loader's general launch (:meth:`.Launcher.run`) does it in Python: it asks the driver
for the current context, looks the kernel up, reserves the status through
:func:`..engine.state.single_pass`, checks and packs every parameter.  On the H200 that made a
repeated sum of 2^16 or 2^20 elements 38-64 us a call from Python where the Triton replay took 15-25
(``benchmarks/results/h200/2026-11-29-out-of-box``).

:class:`AotRelaunch` keeps what a launch established: the kernel handle, the
context it was loaded in, the stream and its :class:`..engine.state.DeviceState`, the
parameter values of a launch with the positions of those that change per call.  A call
checks what could have changed since (launch hooks, a recording block, graph capture,
another stream or context) and otherwise writes the new values (the pointers of x and y;
over several tiles the tile base, the epoch, and the status buffers' addresses when they
were reallocated) into its thread's parameter block, and launches, from the reservation to
the count under the state's lock; where any check fails it returns False, launching
nothing, and the caller takes the general launch, which decides.  The tensors' dtypes,
contiguity and alignment are the plan's: its signature fixes the dtypes, and
:func:`..runtime.replay.replay_output` checks the rest before the call.  On the H200 a
planned 1024-element int64 sum took 11.4 us a call from Python this way, the relaunch 6.6
of them, where ``torch.cumsum(out=)`` took 11.9
(``benchmarks/results/h200/2026-11-29-percall-relaunch``).
"""

from __future__ import annotations

import ctypes
import sys
from threading import get_ident

from ..engine.state import Status
from ..runtime.launch import hooks_active, recording_active
from .variants import I32_MAX

__all__ = ["AotRelaunch"]

_MAX_THREADS = 64  # parameter blocks kept per relaunch


class _Slot:
    """A marker standing for a per-call value while the parameter layout is read."""

    __slots__ = ()


class _Thread:
    """A thread's parameter block (the driver reads it during the launch call, which
    ctypes makes without the GIL: a block per thread), its fields, and the pointer the
    current context is read into."""

    __slots__ = ("block", "fields", "params", "context", "context_ref", "allocations", "busy")

    def __init__(self, packing, values: list):
        self.block, params = packing.reusable(values)
        self.fields, self.params = self.block.values, ctypes.c_void_p(params)
        self.context = ctypes.c_void_p()
        self.context_ref = ctypes.byref(self.context)
        self.allocations = -1  # the status buffers' addresses in the block are of this count of allocations
        self.busy = False  # a relaunch is writing the block


class AotRelaunch:
    """Relaunch of a loaded variant on the stream and context of its first launch
    (:meth:`of`); ``__call__(x, y)`` returns True once launched, False where the general
    launch must decide (nothing launched)."""

    __slots__ = ("drv", "context", "index", "stream", "state", "grid", "launch", "entries", "accs", "words", "packing",
                 "values", "x_at", "y_at", "status_at", "base_at", "epoch_at", "torch_c", "threads", "x_field",
                 "y_field", "status_fields", "base_field", "epoch_field")

    @classmethod
    def of(cls, torch, drv, function: int, packing, leaves, identity, *, index: int, stream: int, state, grid: int,
           num_warps: int, shared: int, entries: int, accs: tuple, words: int):
        """The relaunch of a launch just made in the current context (``function`` loaded
        there, parameters laid out by ``packing``) on ``stream``, whose status ``state``
        (a :class:`..engine.state.DeviceState`; None for a single tile) it reserved;
        ``leaves(io, status)`` flattens the kernel's arguments (:func:`.kernel_leaves` of
        the launch's length and tiles), ``identity`` is the launch's identity tensor.  None
        where there is no current context of device ``index`` to tie it to."""
        context = drv.current_context()
        if context is None or context[1] != index:
            return None
        self = cls()
        self.drv, self.context, self.index, self.stream, self.grid = drv, context[0], index, stream, grid
        # cuLaunchKernel's arguments before the parameters, as ctypes objects (converted once)
        u = ctypes.c_uint
        self.launch = (ctypes.c_void_p(function), u(grid), u(1), u(1), u(32 * num_warps), u(1), u(1), u(shared),
                       ctypes.c_void_p(stream or None))
        self.entries, self.accs, self.words, self.state = entries, accs, words, state
        single = state is None
        self.packing, self.threads = packing, {}
        self.torch_c = torch._C
        # The launch's parameters, with markers where a call puts its own values.
        x, y, ident = _Slot(), _Slot(), _Slot()
        if single:  # every status buffer is the identity; tile base and epoch 0
            marks = ()
            status = Status((ident, ident, (ident,) * len(accs), (ident,) * len(accs)), ident, 0, 0)
        else:
            buffers = (_Slot(), _Slot(), tuple(_Slot() for _ in accs), tuple(_Slot() for _ in accs))
            status = Status(buffers, _Slot(), _Slot(), _Slot())
            marks = (buffers[0], buffers[1], *buffers[2], *buffers[3], status.counter)
        laid = list(leaves(((x,), (y,), (ident,), (ident,)), status))
        position = {id(v): i for i, v in reversed(list(enumerate(laid)))}  # first position of each object
        self.x_at, self.y_at = position[id(x)], position[id(y)]
        self.status_at = tuple(position[id(m)] for m in marks)
        self.base_at, self.epoch_at = (None, None) if single else (position[id(status.tile_base)],
                                                                   position[id(status.epoch)])
        pointer = identity.data_ptr()
        # The block's values to begin with: the launch's, 0 where a call writes its own.
        self.values = [pointer if v is ident else 0 if isinstance(v, _Slot) else v for v in laid]
        name = packing.field
        self.x_field, self.y_field = name(self.x_at), name(self.y_at)
        self.status_fields = tuple(name(at) for at in self.status_at)
        self.base_field, self.epoch_field = (None, None) if single else (name(self.base_at), name(self.epoch_at))
        return self

    def __call__(self, x, y) -> bool:
        if recording_active():
            return False
        knobs = getattr(sys.modules.get("triton"), "knobs", None)
        if knobs is not None and hooks_active(knobs.runtime):
            return False
        c = self.torch_c
        if c._cuda_isCurrentStreamCapturing() or c._cuda_getCurrentRawStream(self.index) != self.stream:
            return False
        mine = self.threads.get(get_ident())
        if mine is None:
            mine = self._thread()
        elif mine.busy:  # a call from within a call on this thread (a finalizer, a signal handler)
            return False
        if self.drv.raw_context(mine.context_ref) != 0 or mine.context.value != self.context:
            return False
        mine.busy = True
        try:
            return self._relaunch(mine, x, y)
        finally:
            mine.busy = False

    def _relaunch(self, mine: _Thread, x, y) -> bool:
        # Only what changes is written: the pointers (64-bit fields), the tile base (within
        # 32 bits: renew's limit) and the epoch (below 2^29): nothing a field would truncate.
        fields = mine.fields
        setattr(fields, self.x_field, x.data_ptr())
        setattr(fields, self.y_field, y.data_ptr())
        state = self.state
        if state is None:
            self._launch(mine)
            return True
        # The count read before the reservation: buffers grown after it (by this renew, or
        # by another caller before it) leave the block's addresses marked as older, written
        # again next call.
        allocations = state.allocations
        # Reserved, enqueued and counted under the state's lock (renew to issued).  The
        # tile base is a 32-bit argument: past it, the engine starts the count again.
        renewed = state.renew(self.grid, self.entries, self.accs, self.words, I32_MAX)
        if renewed is None:
            return False
        try:
            buffers, base, epoch = renewed
            setattr(fields, self.base_field, base)
            setattr(fields, self.epoch_field, epoch)
            if mine.allocations != allocations or allocations != state.allocations:
                for field, pointer in zip(self.status_fields, _pointers(buffers, state.counter)):
                    setattr(fields, field, pointer)
                mine.allocations = allocations
            self._launch(mine)
        except BaseException:
            state.launch_failed()  # the counter starts again from 0
            raise
        state.issued(self.grid)
        return True

    def _launch(self, mine: _Thread) -> None:
        drv = self.drv
        code = drv.raw_launch(*self.launch, mine.params, None)
        if code:
            drv.check(code, "cuLaunchKernel")

    def _thread(self) -> _Thread:
        """This thread's block, made on its first call."""
        mine = _Thread(self.packing, self.values)
        threads = self.threads
        if len(threads) >= _MAX_THREADS:  # threads come and go: their blocks with them
            threads.clear()
        threads[get_ident()] = mine
        return mine


def _pointers(buffers: tuple, counter) -> tuple:
    """The addresses of a status reservation's buffers (:meth:`..engine.state.DeviceState.renew`)
    in the kernel's order, the tile counter last."""
    words, flags, aggs, incls = buffers
    return (words.data_ptr(), flags.data_ptr(), *[a.data_ptr() for a in aggs], *[i.data_ptr() for i in incls],
            counter.data_ptr())
