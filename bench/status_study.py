"""Status protocol x tile on the device: tagged words against the flag protocol.

Run e's arrangement study (bench/arrangement_study.py) measured tile-local scans
(no look-back) at 0.95-0.96 of copy for int32 and int64 alike, while the full
int64 scan reached 0.67: the loss is in the look-back, and 64-bit values used the
flag protocol (value arrays, a release exchange, acquire reads).  Tagged words
(kernels.WORDS: two words of tag + 32 value bits per 64-bit value, relaxed
atomics only) take the fences out.  This measures both protocols over tiles, for
1-D and 2-D (tuple size 4) scans, as ratios to a copy of the same bytes.

    python bench/status_study.py --json status.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

sys.path.insert(0, ".")
import prefixscan as ps  # noqa: E402
from prefixscan.backends.triton import tuning  # noqa: E402
from prefixscan.bench import _time_cuda_events  # noqa: E402


def main() -> int:
    import torch

    parser = argparse.ArgumentParser()
    parser.add_argument("--json", required=True)
    parser.add_argument("--cases", default="int64:27:1,float64:27:1,int32:28:1,int64:27:4",
                        help="dtype:log2(n):tuple_size, comma-separated")
    parser.add_argument("--tiles", default="2048x4x32,4096x4x32,8192x4x32,4096x8x32",
                        help="block x warps x window, comma-separated")
    parser.add_argument("--protocols", default="flags,words")
    parser.add_argument("--case", type=int, help="only this case (index)")
    parser.add_argument("--compile-only", action="store_true",
                        help="run each variant once, untimed (fills Triton's cache; run cases in parallel)")
    args = parser.parse_args()
    records = []
    gen = torch.Generator(device="cuda").manual_seed(11)
    cases = [(d, int(n), int(s)) for d, n, s in (c.split(":") for c in args.cases.split(","))]
    tiles = [tuple(int(v) for v in t.split("x")) for t in args.tiles.split(",")]
    protocols = {"flags": False, "words": None}
    for index, (dtype_name, log_n, tuple_size) in enumerate(cases):
        if args.case is not None and index != args.case:
            continue
        dtype = getattr(torch, dtype_name)
        n = 1 << log_n
        if dtype.is_floating_point:
            x = torch.randn(n, dtype=dtype, device="cuda", generator=gen)
        else:
            x = torch.randint(-999, 999, (n,), dtype=dtype, device="cuda", generator=gen)
        out = torch.empty_like(x)
        dst = torch.empty_like(x)
        copy = statistics.median(_time_cuda_events([lambda: dst.copy_(x)], 20, 1e-5))
        expected = torch.cumsum(x.view(-1, tuple_size), 0, dtype=dtype).view(-1)
        for protocol in args.protocols.split(","):
            packed = protocols[protocol]
            for block, warps, window in tiles:
                tuning.set_override(tuning.TileConfig(block=block, num_warps=warps, window=window, packed=packed))
                try:
                    run = lambda: ps.scan(x, tuple_size=tuple_size, out=out, backend="triton")  # noqa: E731
                    out.fill_(-7)
                    run()
                    torch.cuda.synchronize()
                    if args.compile_only:
                        continue
                    if dtype.is_floating_point:
                        ok = bool(torch.allclose(out, expected, rtol=1e-6, atol=1e-6 * n ** 0.5))
                    else:
                        ok = bool(torch.equal(out, expected))
                    t0 = time.perf_counter()
                    run()
                    host = time.perf_counter() - t0
                    sec = statistics.median(_time_cuda_events([run], 15, host))
                finally:
                    tuning.set_override(None)
                rec = dict(dtype=dtype_name, n=n, tuple_size=tuple_size, protocol=protocol, block=block,
                           num_warps=warps, window=window, ok=ok, seconds=sec, ratio_to_copy=copy / sec)
                records.append(rec)
                print(f"{dtype_name:8s} 2^{log_n} s={tuple_size} {protocol:5s} block {block:5d} w {warps} "
                      f"window {window:2d} "
                      f"{sec * 1e6:8.1f} us  ratio {copy / sec:.3f}  ok {ok}", flush=True)
        del x, out, dst, expected
    with open(args.json, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "records": records}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
