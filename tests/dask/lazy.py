"""The dask tests' check that building a graph runs nothing."""

from __future__ import annotations

import contextlib

from dask.callbacks import Callback


@contextlib.contextmanager
def no_task_runs():
    """Fails the test if dask runs any task inside the block."""
    ran = []

    class Count(Callback):
        def _pretask(self, key, dsk, state):
            ran.append(key)

    with Count():
        yield
    assert not ran, f"{len(ran)} tasks ran while the graph was built, e.g. {ran[0]}"
