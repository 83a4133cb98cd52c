"""The CUDA driver calls that load and launch an ahead-of-time compiled kernel (ctypes on
``libcuda.so.1``; no Triton, no compiler).

:func:`load` does what Triton 3.6's ``load_binary`` (``triton/backends/nvidia/driver.c``)
does with a cubin: ``cuModuleLoadData``, ``cuModuleGetFunction`` and, for more than 48 KB
of shared memory, ``cuFuncSetCacheConfig`` (prefer shared) and the dynamic shared memory
limit set to the device's opt-in maximum less the kernel's static shared memory.  It loads
into the context current on the calling thread (torch's primary context of the device once
torch has used it).  :func:`launch` does what Triton's generated launcher does for a kernel
of one CTA per program, without cooperative launch or programmatic dependent launch (the
only kind the builder ships): ``cuLaunchKernelEx`` with no attributes, that is
``cuLaunchKernel`` with grid (grid, 1, 1), ``32 * num_warps`` threads and the kernel's
shared memory, on the given stream; ``params`` is the array of pointers to each argument
in order (see :func:`..aot.pack`).
"""

from __future__ import annotations

import ctypes
import threading

__all__ = ["Driver", "CudaError", "driver"]

CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
CU_FUNC_CACHE_PREFER_SHARED = 1
CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97
STATIC_SHARED_LIMIT = 49152  # above it a kernel must opt in (Triton's threshold)


class CudaError(RuntimeError):
    """A CUDA driver call failed (the message names the call and the driver's error)."""


class Driver:
    """The few driver entry points, bound once (``lib``: a loaded ``libcuda.so.1``)."""

    def __init__(self, lib):
        self.lib = lib
        vp, i, u = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint
        self._sig(lib.cuGetErrorString, i, ctypes.POINTER(ctypes.c_char_p))
        self._sig(lib.cuCtxGetCurrent, ctypes.POINTER(vp))
        self._sig(lib.cuCtxGetDevice, ctypes.POINTER(i))
        self._sig(lib.cuModuleLoadData, ctypes.POINTER(vp), ctypes.c_char_p)
        self._sig(lib.cuModuleGetFunction, ctypes.POINTER(vp), vp, ctypes.c_char_p)
        self._sig(lib.cuFuncGetAttribute, ctypes.POINTER(i), i, vp)
        self._sig(lib.cuFuncSetAttribute, vp, i, i)
        self._sig(lib.cuFuncSetCacheConfig, vp, i)
        self._sig(lib.cuDeviceGetAttribute, ctypes.POINTER(i), i, i)
        self._sig(lib.cuLaunchKernel, vp, u, u, u, u, u, u, u, vp, ctypes.POINTER(vp), ctypes.POINTER(vp))
        # The same two entry points without argument conversion, for a planned relaunch
        # (.relaunch), which passes ctypes objects of the exact types: 0.5 and 1 us less
        # than through argtypes (measured with the stub driver of tools/aot_host_bench.py).
        self.raw_launch, self.raw_context = lib["cuLaunchKernel"], lib["cuCtxGetCurrent"]
        self.raw_launch.restype = self.raw_context.restype = ctypes.c_int
        self.lock = threading.Lock()

    @staticmethod
    def _sig(fn, *argtypes):
        fn.argtypes = list(argtypes)
        fn.restype = ctypes.c_int

    def check(self, code: int, call: str) -> None:
        if code != 0:
            text = ctypes.c_char_p()
            self.lib.cuGetErrorString(code, ctypes.byref(text))
            raise CudaError(f"{call} failed: CUDA error {code} ({(text.value or b'unknown').decode()})")

    def current_context(self) -> tuple[int, int] | None:
        """(context handle, device ordinal) current on this thread, None without one."""
        ctx = ctypes.c_void_p()
        self.check(self.lib.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
        if not ctx.value:
            return None
        dev = ctypes.c_int()
        self.check(self.lib.cuCtxGetDevice(ctypes.byref(dev)), "cuCtxGetDevice")
        return ctx.value, dev.value

    def load(self, cubin: bytes, name: str, shared: int, device: int) -> int:
        """Load ``cubin`` into the current context; the handle of its kernel ``name``.
        The module stays loaded for the life of the context, as Triton's do."""
        module, fn = ctypes.c_void_p(), ctypes.c_void_p()
        self.check(self.lib.cuModuleLoadData(ctypes.byref(module), cubin), "cuModuleLoadData")
        self.check(self.lib.cuModuleGetFunction(ctypes.byref(fn), module, name.encode()), "cuModuleGetFunction")
        if shared > STATIC_SHARED_LIMIT:
            optin = ctypes.c_int()
            self.check(self.lib.cuDeviceGetAttribute(ctypes.byref(optin),
                                                     CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device),
                       "cuDeviceGetAttribute")
            if optin.value > STATIC_SHARED_LIMIT:
                static = ctypes.c_int()
                self.check(self.lib.cuFuncSetCacheConfig(fn, CU_FUNC_CACHE_PREFER_SHARED), "cuFuncSetCacheConfig")
                self.check(self.lib.cuFuncGetAttribute(ctypes.byref(static), CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                                                       fn), "cuFuncGetAttribute")
                self.check(self.lib.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                       optin.value - static.value), "cuFuncSetAttribute")
        return fn.value

    def launch(self, function: int, grid: int, num_warps: int, shared: int, stream: int, params) -> None:
        """Launch ``function`` over ``grid`` programs (``params``: a ctypes array of void
        pointers to the arguments)."""
        if grid <= 0:
            return  # Triton's launcher launches nothing for an empty grid
        self.check(self.lib.cuLaunchKernel(function, grid, 1, 1, 32 * num_warps, 1, 1, shared, stream or None,
                                           params, None), "cuLaunchKernel")


_driver: list = []  # [Driver] once loaded, [None] when libcuda.so.1 cannot be loaded


def driver() -> Driver | None:
    """The process's driver bindings, None when ``libcuda.so.1`` does not load."""
    if not _driver:
        try:
            _driver.append(Driver(ctypes.CDLL("libcuda.so.1")))
        except (OSError, AttributeError):
            _driver.append(None)
    return _driver[0]
