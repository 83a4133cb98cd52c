"""Backends: ``cpu`` (vectorized NumPy, runs everywhere) and ``triton`` (GPU kernels).

Each backend module exposes ``DEVICES``, ``NATIVE_LIBRARY`` (the array type
``run_scan`` returns), ``unavailable_reason(device)``,
``device_names()`` and ``run_scan(request)``, which receives a fully checked
:class:`prefixscan._normalize.ScanRequest`.
"""
