"""Look-back window x tile of the 2-D kernel on the device (run d: reading status
words by atomics cost the 2-D kernel ~45% at window 32; do smaller windows, with
fewer atomics per look-back step, win it back?).

    python bench/window_study.py --json window.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, ".")
import prefixscan as ps  # noqa: E402
from prefixscan.backends.triton import tuning  # noqa: E402
from prefixscan.bench import _time_cuda_events  # noqa: E402


def main() -> int:
    import torch

    parser = argparse.ArgumentParser()
    parser.add_argument("--json", required=True)
    args = parser.parse_args()
    rng = np.random.default_rng(3)
    n = 1 << 28
    copy_src = torch.empty(n, dtype=torch.int32, device="cuda")
    copy_dst = torch.empty_like(copy_src)
    fn = lambda: copy_dst.copy_(copy_src)  # noqa: E731
    fn()
    copy = statistics.median(_time_cuda_events([fn], 20, 1e-5))
    records = []
    for label, shape, axis, tuple_size in (("(2^26,4) axis0", (1 << 26, 4), 0, 1),
                                            ("tuple 2, 2^28", (1 << 28,), -1, 2)):
        x = torch.from_numpy(rng.integers(-99, 99, shape, dtype=np.int32)).cuda()
        out = torch.empty_like(x)
        expected = torch.cumsum(x.view(-1, tuple_size) if tuple_size > 1 else x, dim=0,
                                dtype=torch.int32).view(shape)
        for block in (4096, 8192, 16384):
            for window in (2, 4, 8, 16, 32):
                tuning.set_override(tuning.TileConfig(block=block, num_warps=4, window=window))
                try:
                    run = lambda: ps.scan(x, axis=axis, tuple_size=tuple_size, out=out, backend="triton")  # noqa
                    out.fill_(-7)
                    run()
                    ok = bool(torch.equal(out, expected))
                    t0 = time.perf_counter()
                    run()
                    host = time.perf_counter() - t0
                    sec = statistics.median(_time_cuda_events([run], 15, host))
                finally:
                    tuning.set_override(None)
                rec = {"case": label, "block": block, "window": window, "ok": ok, "seconds": sec,
                       "ratio_to_copy": copy / sec}
                records.append(rec)
                print(f"{label:16s} block {block:6d} window {window:3d}  ratio {copy / sec:.3f}  ok {ok}", flush=True)
    with open(args.json, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "copy_seconds_2^28_int32": copy, "records": records},
                  f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
