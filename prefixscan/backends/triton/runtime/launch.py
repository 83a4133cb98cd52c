"""The launch runtime: the one place that calls a compiled Triton kernel.

A launch is described by a :class:`Launch` (kernel, grid, warps, stream,
arguments, constexprs).  The first launch of a variant goes through Triton's
own dispatch (argument binding, specialization, compilation); later launches of
the same variant skip it and call the compiled kernel's launcher directly,
because at small sizes Triton's binding costs more than the kernel
(docs/design/host-path.md).  The variant key therefore holds everything Triton
specializes on, so that a launch never reuses a kernel compiled for other
argument types: tensor dtypes and 16-byte alignment, the specialized integers'
divisibility by 16 and equality with 1 (those of the integers inside tuple
arguments too), the integer width Triton gives every integer argument
(:func:`int_width`), the constexprs, the warps and the register cap.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Iterator

from ....caches import register_cache

__all__ = ["Launch", "launch_kernel", "launch_key", "int_width", "current_stream", "hooks_active",
           "constexpr_tail", "recording", "recording_active"]


@dataclass(frozen=True, eq=False, slots=True)
class Launch:
    """One launch of ``kernel`` over ``grid`` programs.  ``args`` are the
    non-constexpr arguments in the kernel's order (tuples for grouped parameters);
    ``specialized_ints`` those top-level integer arguments Triton specializes on
    (not in the kernel's ``do_not_specialize``).  Integers inside a tuple are always
    specialized (Triton 3.6 applies ``do_not_specialize`` to top-level integers
    only: an element equal to 1 becomes a constant), and the launch key records
    them itself: a count that changes from call to call belongs at the top level,
    in ``do_not_specialize``.  ``maxnreg`` the register cap
    (:func:`..planning.tiles.register_cap`), None for the compiler's choice."""

    kernel: object
    grid: int
    num_warps: int
    stream: int
    interpreter: bool
    args: tuple
    constexprs: dict
    specialized_ints: tuple = ()
    maxnreg: int | None = None


_I32_MIN, _I32_MAX = -(1 << 31), (1 << 31) - 1
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1


def int_width(value: int) -> str:
    """The type Triton gives an integer argument (Triton 3.6, specialized or not):
    "i32" from -2^31 to 2^31 - 1, "i64" up to 2^63 - 1, "u64" above.  A kernel
    compiled for an "i32" argument cannot take a value of another width."""
    if _I32_MIN <= value <= _I32_MAX:
        return "i32"
    if _I64_MIN <= value <= _I64_MAX:
        return "i64"
    return "u64"


def launch_key(launch: Launch, tensor_type) -> tuple:
    """The compiled variant ``launch`` needs (see the module docstring);
    ``tensor_type`` is ``torch.Tensor``.  One pass over the arguments: this runs on
    every launch that is not a planned replay (a recursive walk: about a third less
    time than a stack of (value, inside) pairs for the recurrence kernel's grouped
    arguments)."""
    layout: list = []  # (dtype, 16-byte aligned) of every tensor, tuple parameters flattened (nested ones too)
    widths: list = []  # every integer argument: True for 32 bits, else int_width's name
    nested: list = []  # the integers inside tuple arguments: Triton specializes them whatever do_not_specialize says
    _walk(launch.args, False, tensor_type, layout, widths, nested)
    return (launch.kernel, launch.num_warps, launch.maxnreg, tuple(launch.constexprs.items()), tuple(layout),
            tuple([(v % 16 == 0, v == 1) for v in launch.specialized_ints]), tuple(nested), tuple(widths))


def _walk(args: tuple, inside: bool, tensor_type, layout: list, widths: list, nested: list) -> None:
    """:func:`launch_key`'s pass over ``args`` (``inside``: they are a tuple argument's)."""
    for a in args:
        kind = type(a)
        if kind is int:
            widths.append(_I32_MIN <= a <= _I32_MAX or int_width(a))
            if inside:
                nested.append((a % 16 == 0, a == 1))
        elif isinstance(a, tensor_type):
            layout.append((a.dtype, not a.data_ptr() % 16))
        elif isinstance(a, tuple):  # subclasses too (torch.Size, named tuples): Triton walks them
            _walk(a, True, tensor_type, layout, widths, nested)


_compiled: dict = {}  # launch_key -> compiled kernel
register_cache("prefixscan.backends.triton.runtime.launch.compiled", _compiled.clear)

_recorders: list = []  # lists that :func:`recording` appends launches to


@contextlib.contextmanager
def recording() -> Iterator[list]:
    """Collect every :class:`Launch` made in the block (tests, profiling tools)."""
    seen: list = []
    _recorders.append(seen)
    try:
        yield seen
    finally:
        _recorders.remove(seen)


def recording_active() -> bool:
    """Whether a :func:`recording` block is open (planned replays then take the full path,
    so that the block sees every launch)."""
    return bool(_recorders)


def launch_kernel(launch: Launch):
    """Run ``launch``; returns the compiled kernel (None in the interpreter)."""
    for seen in _recorders:
        seen.append(launch)
    kernel, grid = launch.kernel, launch.grid
    if launch.interpreter:
        kernel[(grid,)](*launch.args, num_warps=launch.num_warps, **launch.constexprs)
        return None
    import torch
    from triton import knobs

    key = launch_key(launch, torch.Tensor)
    compiled = _compiled.get(key)
    if compiled is None:
        options = {} if launch.maxnreg is None else {"maxnreg": launch.maxnreg}
        compiled = _compiled[key] = kernel[(grid,)](*launch.args, num_warps=launch.num_warps, **options,
                                                    **launch.constexprs)
        return compiled
    full = launch.args + constexpr_tail(kernel, len(launch.args), launch.constexprs)
    stream = launch.stream
    if hooks_active(knobs.runtime):
        hook = knobs.runtime.launch_enter_hook
        metadata = compiled.launch_metadata((grid, 1, 1), stream, *full)
        compiled.run(grid, 1, 1, stream, compiled.function, compiled.packed_metadata, metadata,
                     hook, knobs.runtime.launch_exit_hook, *full)
    else:
        compiled.run(grid, 1, 1, stream, compiled.function, compiled.packed_metadata, None, None, None, *full)
    return compiled


def hooks_active(runtime) -> bool:
    """Whether a profiler registered launch hooks (Triton 3.6 keeps an empty
    ``HookChain`` there by default; calling it and building its metadata costs
    microseconds per launch)."""
    for hook in (runtime.launch_enter_hook, runtime.launch_exit_hook):
        if hook is not None and getattr(hook, "calls", True):
            return True
    return False


def constexpr_tail(kernel, nargs: int, constexprs: dict) -> tuple:
    """The constexpr values after the first ``nargs`` arguments, in the kernel's
    order: the compiled launcher takes them positionally."""
    return tuple(constexprs[name] for name in kernel.arg_names[nargs:])


def current_stream(device) -> int:
    """The raw CUDA stream of ``device`` (torch's public accessor costs ~10 us a call)."""
    import torch

    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw(device.index if device.index is not None else torch.cuda.current_device())
    return torch.cuda.current_stream(device).cuda_stream
