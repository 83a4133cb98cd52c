"""A launch that fails leaves the next calls working.

The look-back kernels share status buffers and a tile counter per device and
stream (engine/state.py); a launch whose tiles took ids from the counter and then
raised (a combine failing inside the kernel in the interpreter, a launch stopped
part-way) used to leave the counter ahead of the host's tile base, and the next
multi-tile scan waited forever on a predecessor tile that never came.  Every
case runs in a process of its own (failed_launch_child.py) under a timeout, so
that a hang fails the test instead of the run: a failing multi-tile call, then
multi-tile calls of every kernel that uses look-back state (decoupled look-back,
chained, persistent, the two multi-pass strategies, the 2-D kernel, the orders
kernel, segmented, compaction, partition) against their references.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .device import DEVICE_MARK

pytestmark = DEVICE_MARK

CHILD = Path(__file__).with_name("failed_launch_child.py")
#: A case takes about 15 s of CPU time in the interpreter; a hang never ends.
TIMEOUT_S = 300

CASES = ["decoupled_lookback", "chained", "persistent", "reduce_then_scan", "scan_then_propagate", "2d", "segmented",
         "interrupt-lookback", "interrupt-orders", "interrupt-segmented", "interrupt-compaction"]


@pytest.mark.parametrize("case", CASES)
def test_a_failed_launch_leaves_the_next_calls_working(case):
    try:
        done = subprocess.run([sys.executable, str(CHILD), case], capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{case}: the calls after a failed launch did not return within {TIMEOUT_S} s (a look-back "
                    "waiting on state the failed launch left behind)")
    assert done.returncode == 0 and done.stdout.split() == ["ok", case], done.stdout[-2000:] + done.stderr[-4000:]
