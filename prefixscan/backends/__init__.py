"""Backends: ``cpu`` (compiled Numba kernels from 8192 elements on, NumPy below;
runs everywhere) and ``triton`` (GPU kernels).

Each backend is a module that conforms to :class:`prefixscan.backends.base.Backend`:
availability (``DEVICES``, ``unavailable_reason``, ``device_names``), the array
type of its results (``NATIVE_LIBRARY``), capability flags (``TAKES_ALGORITHM``,
``TAKES_STRATEGY``, ``COMPLEX_TYPES``) and ``run_scan`` / ``run_scan_planned``
on a checked :class:`prefixscan._request.ScanRequest`.  What a backend does for
the other primitives lives with each primitive (:mod:`prefixscan.primitives`),
which builds on the backend's shared parts: :mod:`.cpu.compiled` (the Numba
kernels' types, launcher and scan loops) and the GPU backend's device building
blocks, engine, launch runtime and planning (:mod:`.triton`).
"""
