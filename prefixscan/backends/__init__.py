"""Backends: ``cpu`` (compiled Numba kernels from 8192 elements on, NumPy below;
runs everywhere) and ``triton`` (GPU kernels).

Each backend is a module that conforms to :class:`prefixscan.backends.base.Backend`:
availability (``DEVICES``, ``unavailable_reason``, ``device_names``), the array
type of its results (``NATIVE_LIBRARY``), capability flags (``TAKES_ALGORITHM``,
``TAKES_STRATEGY``), ``run_scan`` / ``run_scan_planned`` on a checked
:class:`prefixscan._request.ScanRequest`, and the library-specific steps of the
derived functions (``delta_encode``, ``compact``).
"""
