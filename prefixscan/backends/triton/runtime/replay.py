"""Planned replay of a one-launch GPU scan (``prefixscan.Scan``'s fast path).

cuda.compute's reusable-object idea taken down to the launch: after a scan of
some signature (shape, dtype, device, options) has run once, a :class:`FastScan`
relaunches the same compiled kernel on new tensors with every argument but the
input and output pointers fixed (and the seeds, for a seeded scan: laid out
again per call, :class:`..scan.job.SeedLayout`); multi-tile scans renew their status
reservation, tile base and epoch (:class:`StatusRenewal`).  At small sizes the
host path, not the kernel, sets the time per call (docs/design/host-path.md).
"""

from __future__ import annotations

from typing import NamedTuple

from ..planning import planner
from ..scan.job import SeedLayout
from .launch import Launch, constexpr_tail, hooks_active, int_width, recording_active
from ..engine.state import DeviceState

__all__ = ["StatusRenewal", "Launched", "Relaunch", "FastScan", "replay_output"]


# Records made on every look-back launch: named tuples, which cost a third of a
# frozen dataclass to build (the full host path of a small scan is ~20 us).
class StatusRenewal(NamedTuple):
    """What a replay of a multi-tile look-back launch renews per call: ``entries``
    status entries of fields ``accs`` (``words`` tagged words each) reserved from
    ``state``, and the tile base and epoch at argument positions ``at`` and ``at + 1``."""

    state: DeviceState
    entries: int
    accs: tuple
    words: int
    stream: int
    at: int


class Launched(NamedTuple):
    """A look-back launch as it ran: what a replay needs (``compiled`` is None in
    the interpreter; ``renewal`` None for single-tile launches, which use no status)."""

    launch: Launch
    compiled: object
    renewal: StatusRenewal | None


class Relaunch:
    """Relaunches a compiled look-back launch with this call's tensors in its first
    argument (the kernel's field tuples) and every other argument as planned; a
    multi-tile launch renews its status reservation, tile base and epoch
    (``renewal``).  The one replay mechanism of the Triton backend: scans
    (:class:`FastScan`) and the recurrence use it."""

    __slots__ = ("compiled", "grid", "index", "args", "rest", "tail", "renewal", "widths", "torch", "knobs")

    def __init__(self, compiled, grid: int, device, args: tuple, tail: tuple, renewal: StatusRenewal | None):
        import torch
        from triton import knobs

        if renewal is not None:  # each call reserves its own status: the planned buffers are not kept alive
            args = args[:1] + (None,) + args[2:]
        self.compiled, self.grid, self.args, self.tail, self.renewal = compiled, grid, args, tail, renewal
        self.index = device.index
        if self.index is None and device.type == "cuda":
            self.index = torch.cuda.current_device()
        self.rest = args[1:] + tail
        # The compiled kernel took the tile base and epoch at these widths: a replay
        # must not pass it wider ones (compiled.run would overflow).
        self.widths = None if renewal is None else (int_width(args[renewal.at]), int_width(args[renewal.at + 1]))
        self.torch, self.knobs = torch, knobs

    @classmethod
    def of(cls, launched: Launched, device) -> "Relaunch":
        """The replay of ``launched``, without its first argument (the first call's
        tensors, which would stay alive: every call passes its own)."""
        launch = launched.launch
        tail = constexpr_tail(launch.kernel, len(launch.args), launch.constexprs)
        return cls(launched.compiled, launch.grid, device, (None,) + launch.args[1:], tail, launched.renewal)

    def __call__(self, io: tuple) -> bool:
        """Launch on ``io``; False, launching nothing, where the replay does not apply
        (launch hooks, a :func:`.launch.recording` block, which sees every launch, another
        stream, a capture, a tile base wider than the compiled one)."""
        if hooks_active(self.knobs.runtime) or recording_active():
            return False
        c = self.compiled
        stream = self.torch._C._cuda_getCurrentRawStream(self.index)
        renewal = self.renewal
        if renewal is None:
            c.run(self.grid, 1, 1, stream, c.function, c.packed_metadata, None, None, None, io, *self.rest)
            return True
        if stream != renewal.stream or self.torch._C._cuda_isCurrentStreamCapturing():
            return False  # status buffers belong to one stream; a capture takes one-shot buffers
        state = renewal.state
        # Reserved, enqueued and counted under the state's lock (renew to issued).
        buffers, base, epoch = state.renew(self.grid, renewal.entries, renewal.accs, renewal.words)
        if (int_width(base), "i32") != self.widths:  # epochs stay below 2^29: always i32
            state.cancel()
            return False
        a, at = self.args, renewal.at
        try:
            c.run(self.grid, 1, 1, stream, c.function, c.packed_metadata, None, None, None,
                  io, buffers, *a[2:at], base, epoch, *a[at + 2:], *self.tail)
        except BaseException:
            state.launch_failed()  # the counter is the one the planned arguments hold: zeroed in place
            raise
        state.issued(self.grid)
        return True


def replay_output(torch, x, out, shape: tuple, dtype, device):
    """Where a planned replay writes the scan of ``x``: ``out``, or a new tensor of
    ``shape`` when ``out`` is None; None where the replay does not apply (``x`` or
    ``out`` not contiguous or not 16-byte aligned, ``out`` overlapping ``x``, in place
    included), and the caller takes the full path."""
    if not x.is_contiguous():
        return None
    at = x.data_ptr()
    if at % 16:
        return None
    if out is None:
        return torch.empty(shape, dtype=dtype, device=device)
    if not out.is_contiguous():
        return None
    out_at = out.data_ptr()
    if out_at % 16 or out_at == at or (out_at < at + x.nbytes and at < out_at + out.nbytes):
        return None
    return out


class FastScan:
    """Replays a one-launch GPU scan on new tensors of the same signature: the kernel,
    grid and every argument but the input and output pointers are fixed; multi-tile
    scans renew their status reservation, tile base and epoch (:class:`Relaunch`).
    Returns None where the replay does not apply (non-contiguous, misaligned or aliased
    tensors, another stream, launch hooks, a tile base that outgrew the integer width
    the kernel was compiled for), and the caller takes the full path."""

    __slots__ = ("relaunch", "shape", "dtype", "device", "identities", "torch", "generation", "seed")

    def __init__(self, relaunch: Relaunch, shape, dtype, device, identities: tuple, seeds: tuple | None,
                 seed: SeedLayout | None = None):
        import torch

        self.relaunch, self.shape, self.dtype, self.device, self.seed = relaunch, shape, dtype, device, seed
        self.identities = (identities, seeds)
        self.torch = torch
        self.generation = planner.generation

    @property
    def grid(self) -> int:
        return self.relaunch.grid

    @property
    def replay(self) -> StatusRenewal | None:
        return self.relaunch.renewal

    @classmethod
    def planned(cls, launched: Launched, shape, dtype, device, seed: SeedLayout | None = None) -> "FastScan":
        """The replay of ``launched`` (a look-back launch of one input and one output,
        seeded where ``seed`` says how the seeds are laid out)."""
        # Not the first call's tensors (they would stay alive), nor its seeds: the kernel's
        # first argument is the field tuples (x, y, identities, seeds), kept as identities
        # and the unseeded seeds (which are the identities).
        io = launched.launch.args[0]
        return cls(Relaunch.of(launched, device), shape, dtype, device, io[2], None if seed is not None else io[3],
                   seed)

    def expired(self) -> bool:
        """Whether the tile this replay launches may no longer be the one a scan gets
        (an override or a new table since it was planned): the caller plans again
        instead of calling the replay."""
        return self.generation != planner.generation

    def __call__(self, x, out, init=None):
        """The scan of ``x`` into ``out`` (None: a new tensor), seeded with ``init`` (the
        checked value, exactly when the planned scan was seeded); None where the replay
        does not apply."""
        y = replay_output(self.torch, x, out, self.shape, self.dtype, self.device)
        if y is None:
            return None
        identities, seeds = self.identities
        if self.seed is not None:
            seeds = (self.seed.columns(init),)
        return y if self.relaunch(((x,), (y,), identities, seeds)) else None
