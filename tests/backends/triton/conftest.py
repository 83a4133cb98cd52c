"""Fixtures of the Triton kernel tests.

The import sits inside the fixture: Triton is optional, and the test modules skip
themselves (through device.py) without it.
"""

from __future__ import annotations

import pytest


class RecordedKernels:
    """Recorded launches seen as their kernels: ``== [kernel, ...]``, ``len`` and ``clear()``."""

    def __init__(self, launches):
        self.launches = launches

    def clear(self):
        self.launches.clear()

    def __len__(self):
        return len(self.launches)

    def __eq__(self, kernels):
        return [launch.kernel for launch in self.launches] == list(kernels)

    def __repr__(self):
        return repr([launch.kernel for launch in self.launches])


@pytest.fixture
def kernels_run():
    """The kernels launched during the test, in order (runtime.recording)."""
    from prefixscan.backends.triton.runtime import launch as runtime

    with runtime.recording() as launches:
        yield RecordedKernels(launches)
