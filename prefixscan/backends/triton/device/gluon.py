"""Gluon as the orders kernel (:mod:`..scan.orders`) sees it: the real language on a GPU,
``triton.language`` with layouts ignored under ``TRITON_INTERPRET=1``.

Gluon kernels cannot run in Triton's interpreter.  The orders kernel is written
against three names chosen here, ``gl`` (the language), ``async_copy`` (Ampere's
asynchronous copies) and ``jit`` (the decorator): on a GPU they are Gluon's; in
the interpreter they are stand-ins that run the same logic as a ``triton.jit``
function, dropping layout arguments and keeping shared-memory buffers as the
tensor last stored (the interpreter has no threads to lay data over).  So the
kernel's logic is tested on the CPU like the other kernels.
"""

import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as _gluon_language
from triton.experimental.gluon.language.nvidia.ampere import async_copy as _async_copy

from ...._environment import interpreter_mode

__all__ = ["gl", "async_copy", "jit"]


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
