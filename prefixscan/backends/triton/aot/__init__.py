"""Ahead-of-time compiled scans: the first 1-D sums of a process without Triton's JIT.

A process's first GPU scan through Triton pays for importing Triton, for Triton's cache
key of its own installation and for compiling or loading each kernel variant
(docs/design/cold-start.md).  The default variants of the most common scan, a forward
inclusive sum of one contiguous lane of int32, int64, float32 or float64 (what
``prefixscan.cumsum`` runs, and ``prefixscan.scan``'s int32 sum in int32), ship compiled
for sm_90 (``sm90/``, built by ``tools/aot_build.py``) and are launched here through the
CUDA driver (:mod:`.driver`), in torch's current context and stream, with the engine's
status buffers, tile counter and epochs (:func:`..engine.state.single_pass`), exactly as
:func:`..scan.lookback.launch_lookback` would launch the JIT-compiled variant.

:func:`try_scan` returns None, so that the caller takes the Triton path, whenever
anything does not match: ``PREFIXSCAN_AOT=0``, the interpreter, another scan (operator,
direction, order, seed, tuple size, several lanes, strategy, a forced tile), a device
other than compute capability 9.0, a Triton version other than the one the cubins were
built with (read from the package metadata: Triton is not imported), a non-contiguous or
misaligned tensor, an ``out`` that is not contiguous, of another dtype or the input
itself, a length the variant does not cover, Triton launch hooks, a
:func:`..runtime.launch.recording` block, CUDA graph capture of a variant not loaded
before the capture (a capture gets the engine's one-shot status, as Triton's launch
does), no driver or no current context of the tensor's device, a variant that is not
shipped or whose cubin lays its parameters out otherwise than :mod:`.packing` packs them.

A call of a new length is host-bound (docs/design/host-path.md, "The shipped kernels: a
stream of new lengths"): each loaded variant keeps its :class:`.packing.Packing` (one
``struct.pack_into`` per launch), the launcher remembers its variant choice per length
class (:meth:`Launcher.variant`), a planned replay makes the replay of another length of
its class (:meth:`AotReplay.for_length`, which :class:`prefixscan.Scan` keeps per class),
and the modules the path needs are imported with this one, which the backend's first GPU
scan imports (torch is loaded then).  Nothing here
imports triton.
"""

from __future__ import annotations

import sys
import zlib
from typing import NamedTuple

import torch

from . import driver as _driver
from ...._arrays import as_torch
from ...._environment import environ_get, interpreter_mode
from ....caches import register_cache
from .packing import Packing, cubin_parameters
from .relaunch import AotRelaunch
from .variants import DATA_DIR, I32_MAX, TRITON_TYPES, Plan, load_spec, plan_1d, triton_version, variant_name
from ..engine.state import identity_tensor, single_pass
from ..planning import planner
from ..runtime.launch import current_stream, hooks_active, recording_active
from ..runtime.replay import replay_output
from ..scan.job import lane_layout
from ..tuner.first_use import length_class, settled

__all__ = ["ENV", "kernel_args", "kernel_leaves", "pack", "Launcher", "AotReplay", "LengthClass", "try_scan", "default_launcher"]

#: ``PREFIXSCAN_AOT=0`` turns the ahead-of-time path off (every scan takes Triton's JIT).
ENV = "PREFIXSCAN_AOT"
#: Variant choices a launcher remembers (length classes x dtypes x devices x strategies:
#: a few dozen in practice); emptied when full.
MAX_CHOICES = 1024


def kernel_args(io: tuple, status, length: int, tiles: int) -> tuple:
    """``scan_1d_kernel``'s non-constexpr arguments for one lane of ``length`` elements in
    ``tiles`` tiles (``status``: a :class:`..engine.state.Status`), in the kernel's order,
    as :func:`..scan.lookback.launch_lookback` passes them (order 1; M not divided by 16:
    one forward lane is never ``ALIGNED``)."""
    return (io, status.buffers, status.counter, length, tiles, status.tile_base, status.epoch, tiles, 1)


def kernel_leaves(io: tuple, status, length: int, tiles: int) -> list:
    """:func:`kernel_args` flattened as Triton's launcher flattens tuples: one value per
    kernel parameter but the trailing scratch pointers (what :class:`.packing.Packing`
    packs), built directly."""
    leaves = [t for group in io for t in group]
    words, flags, aggs, incls = status.buffers
    leaves += (words, flags, *aggs, *incls, status.counter, length, tiles, status.tile_base, status.epoch, tiles, 1)
    return leaves


def _leaves(args, out: list) -> list:
    for a in args:
        if isinstance(a, tuple):
            _leaves(a, out)
        else:
            out.append(a)
    return out


def pack(params: list, args: tuple):
    """The kernel parameters of ``args`` (tuples flattened, as Triton's launcher does) for a
    variant whose JSON lists ``params``: ``(array of pointers to the parameters, the
    block holding them)``, or a string saying what does not match (a dtype, an alignment
    the variant assumes, an integer outside its width, the count).  The loader keeps one
    :class:`.packing.Packing` per loaded variant; this builds one per call."""
    return Packing(params).pack(_leaves(args, []))


class _Refused(Exception):
    """Raised inside a status reservation when the launch cannot go ahead after all."""


class TorchCuda:
    """What the launcher asks torch about the device (tests pass their own)."""

    @staticmethod
    def capability(index: int) -> tuple:
        return tuple(torch.cuda.get_device_capability(index))

    @staticmethod
    def current_device() -> int:
        return torch.cuda.current_device()

    @staticmethod
    def capturing() -> bool:
        return torch.cuda.is_current_stream_capturing()

    @staticmethod
    def stream(device) -> int:
        return current_stream(device)


def planned_tile(device, config, acc, n: int):
    """The tile the scan route would run a sum of ``config`` over one lane of ``n``
    elements with (accumulator ``acc``, a torch dtype), asked of the same functions the
    route and :func:`..scan.lookback.launch_lookback` ask (:func:`..planning.planner.strategy_for`,
    :func:`..planning.planner.lookback_config`), or a reason why the route would not run
    the decoupled look-back (a forced tile, the caller's or the table's strategy)."""
    if planner.overridden():
        return "a forced tile"
    strategy = planner.strategy_for(config, device, (acc,), n, 1, False)
    if strategy != "decoupled_lookback":
        return f"the route runs {strategy}"
    return planner.lookback_config(device, (acc,), n, 1, False, monoid=config.monoid)


class Launcher:
    """Loads shipped variants and launches them.  ``get_driver``: returns a
    :class:`.driver.Driver` or None; ``version``: returns the installed Triton version;
    ``data_dir`` and ``specs``: where the variants lie and how their JSON is read;
    ``cuda``: the device queries (:class:`TorchCuda`); ``tile``: :func:`planned_tile`;
    ``settled``: whether a length class's first-use tuning is settled
    (:func:`..tuner.first_use.settled`, asked by :meth:`AotReplay.for_length`)."""

    def __init__(self, get_driver=_driver.driver, version=triton_version, data_dir=DATA_DIR, specs=load_spec,
                 cuda=TorchCuda, tile=planned_tile, settled=settled):
        self.get_driver, self.version, self.data_dir, self.specs = get_driver, version, data_dir, specs
        self.cuda, self.tile, self.settled = cuda, tile, settled
        self.functions: dict = {}  # (variant name, cubin, context) -> (CUfunction handle, Packing), or why not
        self.capabilities: dict = {}  # device index -> (major, minor)
        # (device, strategy, dtypes, length class) -> (spec, plan, planner generation): see variant()
        self.choices: dict = {}
        self.generation = planner.generation  # the planner's, when self.choices was filled
        self.launches = 0  # scans launched (tests and tools ask which path served a call)

    # -- what a call needs -------------------------------------------------------------

    def why_not(self, request) -> str | tuple:
        """A reason string when ``request`` cannot take the shipped kernels, else
        ``(x, out or None, variant spec, plan)``."""
        if environ_get(ENV, "1") == "0":
            return f"{ENV}=0"
        if interpreter_mode():
            return "the interpreter"
        c = request.config
        if request.struct or len(request.fields) != 1 or request.init is not None:
            return "not one unseeded field"
        if not (getattr(c.monoid, "builtin", False) and c.monoid.name == "add"):
            return "not a sum"
        if not c.inclusive or c.reverse or c.order != 1 or c.tuple_size != 1 or c.deterministic:
            return "not a forward inclusive sum of order 1"
        if c.strategy not in ("auto", "decoupled_lookback"):
            return f"strategy {c.strategy!r}"
        if lane_layout(request)[::2] != (1, 1):
            return "several lanes or interleaved streams"
        x = as_torch(request.fields[0])
        if x.device.type != "cuda":
            return "not a CUDA tensor"
        if not x.is_contiguous() or x.data_ptr() % 16:
            return "input not contiguous or not 16-byte aligned"
        x_dtype, acc_dtype = str(x.dtype).rpartition(".")[2], request.acc_dtypes[0]
        if request.out_dtypes[0] != acc_dtype or x_dtype not in TRITON_TYPES or acc_dtype not in TRITON_TYPES:
            return f"dtypes {x_dtype} -> {acc_dtype}"
        out = None
        if request.out is not None:
            out = as_torch(request.out[0])
            if not out.is_contiguous() or out.data_ptr() % 16 or out.data_ptr() == x.data_ptr() \
                    or str(out.dtype).rpartition(".")[2] != acc_dtype or out.device != x.device:
                return "out not contiguous, misaligned, of another dtype or device, or the input"
        reason = self._device_reason(x.device)
        if reason:
            return reason
        acc = getattr(torch, acc_dtype)
        n = x.numel()
        if n == 0:
            return x, out, None, None  # nothing to launch
        chosen = self.variant(x.device, c, x_dtype, acc, n)
        if isinstance(chosen, str):
            return chosen
        return (x, out) + chosen

    def variant(self, device, config, x_dtype: str, acc, n: int):
        """``(spec, plan)`` of the shipped variant that runs the scan route's launch for a
        sum of ``config`` over ``n`` > 0 elements of ``x_dtype`` into ``acc`` (a torch
        dtype) on ``device``, or a reason (another strategy, a variant not shipped or
        built with another Triton, a length it does not take).

        Remembered per length class, ``(n - 1).bit_length()``, as the planner remembers
        its strategy and tile (the ``tile`` function must answer per class): within a
        class the tile, and so every choice :func:`.variants.plan_1d` makes but the
        number of tiles, is one (a power-of-two tile holds either all of the class's
        lengths or none).  Not remembered while a tile is forced (a context variable: other
        contexts may force none), nor refusals; forgotten when the planner's generation
        moves (a table stored or forgotten, an override set or lifted)."""
        key = None if planner.overridden() else (device, config.strategy, x_dtype, acc, (n - 1).bit_length())
        if key is not None:
            if self.generation != planner.generation:
                self.choices.clear()
                self.generation = planner.generation
            try:
                found = self.choices.get(key)
            except TypeError:  # a device object that is not hashable (tests' stand-ins): not remembered
                found = key = None
            if found is not None and found[2] != planner.generation:  # stored across a table change
                found = None
            if found is not None:
                spec, plan, _ = found
                if n > spec["max_length"]:
                    return f"length {n} outside the variant"
                return spec, plan if plan.single else Plan(*plan[:-1], -(-n // plan.block))
        generation = planner.generation
        tile = self.tile(device, config, acc, n)
        if isinstance(tile, str):
            return tile
        plan = plan_1d(tile, n, acc)
        name = variant_name(x_dtype, str(acc).rpartition(".")[2], plan)
        spec = self.specs(name)
        if spec is None:
            return f"variant {name} not shipped"
        if spec["triton"] != self.version():
            return f"built with triton {spec['triton']}, installed {self.version()}"
        if not 0 < n <= spec["max_length"]:
            return f"length {n} outside the variant"
        if key is not None and generation == planner.generation and tile.block & (tile.block - 1) == 0:
            if len(self.choices) >= MAX_CHOICES:
                self.choices.clear()
            self.choices[key] = (spec, plan, generation)  # the generation it was chosen under
        return spec, plan

    def _device_reason(self, device) -> str:
        current = self.cuda.current_device()
        index = device.index if device.index is not None else current
        cap = self.capabilities.get(index)
        if cap is None:
            cap = self.capabilities[index] = tuple(self.cuda.capability(index))
        if cap != (9, 0):
            return f"compute capability {cap}"
        if index != current:
            return "not the current device"
        return ""

    def function(self, spec: dict, device_index: int, load: bool = True):
        """The variant's kernel in the current context (loaded on first use unless not
        ``load``), or a reason."""
        drv = self.get_driver()
        if drv is None:
            return "no CUDA driver library"
        try:
            ctx = drv.current_context()
        except _driver.CudaError as e:
            return str(e)
        if ctx is None or ctx[1] != device_index:
            return "no current context of the device"
        key = (spec["name"], spec["cubin"], ctx[0])
        fn = self.functions.get(key)
        if fn is None:
            if not load:
                return "not loaded yet (graph capture)"
            with drv.lock:  # one load per context, whichever thread comes first
                fn = self.functions.get(key)
                if fn is None:
                    fn = self.functions[key] = self._load(drv, spec, device_index)  # a refusal is not tried again
        if isinstance(fn, str):
            return fn
        return (drv,) + fn

    def _load(self, drv, spec: dict, device_index: int):
        """``(CUfunction handle, Packing)`` of the variant, loaded into the current
        context, or why not: its cubin unreadable or not loadable, or its parameters not
        laid out as :class:`.packing.Packing` packs them."""
        try:
            cubin = zlib.decompress((self.data_dir / spec["cubin"]).read_bytes())
            packing = Packing(spec["params"])
            mismatch = packing.mismatch(*cubin_parameters(cubin, spec["name"]))
            if mismatch:
                return f"cannot load {spec['cubin']}: {mismatch}"
            return drv.load(cubin, spec["name"], spec["shared"], device_index), packing
        except (OSError, zlib.error, ValueError, _driver.CudaError) as e:
            return f"cannot load {spec['cubin']}: {e}"

    # -- the launch ----------------------------------------------------------------------

    def run(self, spec: dict, plan, x, y, ident, keep: bool = False):
        """Scan ``x`` into ``y`` with the variant; False, launching nothing, where a
        per-call condition does not hold (hooks, recording, capture, context, more tiles than a
        32-bit tile base holds).
        Launched: True, or with ``keep`` the :class:`.relaunch.AotRelaunch` of this launch,
        or a reason string where none can be made (no current context; under capture none
        is made: True)."""
        triton = sys.modules.get("triton")
        knobs = getattr(triton, "knobs", None)
        if (knobs is not None and hooks_active(knobs.runtime)) or recording_active():
            return False  # a profiler's hooks or a recording block see every launch through Triton
        # Under CUDA graph capture the engine gives the launch a one-shot status (allocated
        # and zeroed inside the capture, tile base 0, epoch 1: every replay starts afresh),
        # as it does for Triton's launch; only loading a module is left out of a capture.
        capturing = self.cuda.capturing()
        device = x.device
        loaded = self.function(spec, device.index if device.index is not None else self.cuda.current_device(),
                               load=not capturing)
        if isinstance(loaded, str):
            return False
        drv, fn, packing = loaded
        stream = self.cuda.stream(device)
        # The tile base is a 32-bit argument: past it, the engine starts the count again.
        reservation = single_pass(device, stream, plan.tiles, plan.tiles, (ident.dtype,), plan.words,
                                  single=plan.single, placeholder=ident, limit=I32_MAX)
        if reservation is None:
            return False  # more tiles than a 32-bit tile base holds
        io = ((x,), (y,), (ident,), (ident,))
        try:
            with reservation as status:
                packed = packing.pack(kernel_leaves(io, status, x.numel(), plan.tiles))
                if isinstance(packed, str):
                    raise _Refused(packed)  # the reservation is given back (the counter zeroed)
                drv.launch(fn, plan.tiles, spec["num_warps"], spec["shared"], stream, packed[0])
        except _Refused:
            return False
        self.launches += 1
        if not keep or capturing:  # (a capture's status is one-shot)
            return True
        n = x.numel()
        try:  # the scan is launched: nothing past here may raise
            return AotRelaunch.of(torch, drv, fn, packing, lambda io, st: kernel_leaves(io, st, n, plan.tiles), ident,
                                  index=device.index if device.index is not None else self.cuda.current_device(),
                                  stream=stream, state=status.state, grid=plan.tiles, num_warps=spec["num_warps"],
                                  shared=spec["shared"], entries=plan.tiles, accs=(ident.dtype,),
                                  words=plan.words) or "no current context of the device"
        except _driver.CudaError as e:
            return str(e)

    def scan(self, request, plan_replay: bool = False):
        """The scan of ``request`` (its results, with ``plan_replay`` also an
        :class:`AotReplay`), or None."""
        checked = self.why_not(request)
        if isinstance(checked, str):
            return None
        x, out, spec, plan = checked
        acc = getattr(torch, request.acc_dtypes[0])
        y = out if out is not None else torch.empty(request.out_shape, dtype=acc, device=x.device)
        if spec is None:  # an empty input
            return ([y], None) if plan_replay else [y]
        ident = identity_tensor(request.identity[0].item(), acc, x.device)
        if not self.run(spec, plan, x, y, ident):
            return None
        if not plan_replay:
            return [y]
        replay = None
        if x is request.fields[0].obj:  # a torch input (a view of another array's is not kept)
            # The length class's first-use tuning is settled (a shipped or stored entry) or
            # not (tuning postponed): a replay for another length of the class asks again.
            replay = AotReplay(self, spec, plan, tuple(request.out_shape), acc, x.device, ident,
                               LengthClass(request.config, str(x.dtype).rpartition(".")[2],
                                           length_class(request)))
        return [y], replay


class LengthClass(NamedTuple):
    """What :meth:`AotReplay.for_length` needs to choose a variant for another length of
    the class: the scan's configuration, the input's dtype name and the class
    :func:`..tuner.first_use.ensure_for` settles (its last member the length class,
    ``(n - 1).bit_length()`` of one lane of n elements)."""

    config: object
    x_dtype: str
    settled: tuple


class AotReplay:
    """A planned replay of a scan the shipped kernels served (the interface of
    :class:`..runtime.replay.FastScan`): the variant, grid and identity fixed, the status
    reserved per call; None where it does not apply, and the caller takes the full path.
    :meth:`for_length` makes the replay of another length of the same class."""

    __slots__ = ("launcher", "spec", "plan", "shape", "dtype", "device", "ident", "generation", "torch", "lengths",
                 "relaunch", "calls")

    def __init__(self, launcher: Launcher, spec: dict, plan, shape: tuple, dtype, device, ident,
                 lengths: LengthClass):
        self.launcher, self.spec, self.plan, self.shape, self.dtype = launcher, spec, plan, shape, dtype
        self.device, self.ident, self.torch, self.lengths = device, ident, torch, lengths
        self.generation = planner.generation
        # The relaunch of the loaded variant (.relaunch.AotRelaunch), made by this replay's
        # second launch (a length seen once, as in a stream of new lengths, does not pay for
        # making it); None before, False where none could be made.
        self.relaunch, self.calls = None, 0

    @property
    def grid(self) -> int:
        return self.plan.tiles

    def expired(self) -> bool:
        """Whether the tile may have changed since (an override or a new table)."""
        return self.generation != planner.generation

    def __call__(self, x, out, init=None):
        if init is not None or environ_get(ENV, "1") == "0":
            return None
        y = replay_output(self.torch, x, out, self.shape, self.dtype, self.device)
        if y is None:
            return None
        relaunch = self.relaunch
        if relaunch and relaunch(x, y):
            self.launcher.launches += 1
            return y
        keep = relaunch is None and self.calls > 0
        launched = self.launcher.run(self.spec, self.plan, x, y, self.ident, keep=keep)
        if not launched:
            return None
        self.calls += 1
        if keep and launched is not True:  # the relaunch, or why there is none: the general launch from now on
            self.relaunch = launched if isinstance(launched, AotRelaunch) else False
        return y

    def for_length(self, x):
        """The replay of this plan for ``x``, a 1-D tensor of another length of the same
        length class (``(n - 1).bit_length()``), or None where the full path must decide.

        The caller has checked everything else a full call checks and this replay
        assumed: ``x``'s type, dtype and device, ``out``'s dtype, device and strides (its
        shape is the new length's); what depends on the length is done here, as
        :meth:`Launcher.why_not` does it: the variant of the length (:meth:`Launcher.variant`,
        which remembers one per class and checks the length against the variant's), so
        that its tile count, grid and length argument are the full path's.  None while
        the interpreter is on, once the plan expired, or when the class's first-use
        tuning is not settled (``Launcher.settled``: the full path would ask the tuner
        again)."""
        n = x.numel()
        lengths = self.lengths
        if n == 0 or (n - 1).bit_length() != lengths.settled[-1] or self.expired() \
                or interpreter_mode() \
                or not self.launcher.settled(lengths.settled):
            return None
        chosen = self.launcher.variant(self.device, lengths.config, lengths.x_dtype, self.dtype, n)
        if isinstance(chosen, str):
            return None
        return AotReplay(self.launcher, chosen[0], chosen[1], (n,), self.dtype, self.device, self.ident, lengths)


_default: list = []


def _clear_capabilities() -> None:
    """The devices' compute capabilities the process's launcher read (its loaded kernels
    stay: their modules live as long as their contexts)."""
    for launcher in _default:
        launcher.capabilities.clear()


register_cache("prefixscan.backends.triton.aot.capabilities", _clear_capabilities)


def _clear_choices() -> None:
    """The variant chosen per length class (:meth:`Launcher.variant`)."""
    for launcher in _default:
        launcher.choices.clear()


register_cache("prefixscan.backends.triton.aot.choices", _clear_choices)


def default_launcher() -> Launcher:
    """The process's launcher of the shipped variants."""
    if not _default:
        _default.append(Launcher())
    return _default[0]


def try_scan(request, plan: bool = False):
    """``run_scan``'s result (with ``plan``, ``run_scan_planned``'s) from the shipped
    kernels, or None: the caller takes the Triton path."""
    return default_launcher().scan(request, plan)
