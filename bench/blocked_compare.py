"""The one-look-back kernel of integer sums (``blocked.orders_kernel``) against the
general kernels it replaces (the loop over orders, the 2-D and masked-columns kernels),
in one process, as ratios to a copy of the same bytes; and a race check: every blocked
result repeated and compared bitwise.

    python bench/blocked_compare.py --json compare.json [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

sys.path.insert(0, ".")


def main() -> int:
    import torch

    import prefixscan as ps
    from prefixscan.backends.triton import launch
    from prefixscan.bench import _time_cuda_events

    parser = argparse.ArgumentParser()
    parser.add_argument("--json", required=True)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--log2n", type=int, default=27)
    args = parser.parse_args()
    n = 1 << args.log2n
    gen = torch.Generator(device="cuda").manual_seed(11)
    cases = [(q, 1, None) for q in (2, 3, 5, 8)] + [(1, s, None) for s in (2, 3, 4, 5, 7, 8, 16, 32)]
    cases += [(q, s, None) for q, s in ((2, 2), (5, 8), (8, 8))] + [(1, 1, (n // 4, 4)), (1, 1, (n // 2, 2))]
    records = []
    failures = 0
    for dtype in (torch.int32, torch.int64):
        x = torch.randint(-(1 << 30), 1 << 30, (n,), device="cuda", generator=gen, dtype=torch.int64).to(dtype)
        y = torch.empty_like(x)
        copy = statistics.median(_time_cuda_events([lambda: y.copy_(x)], 20, 1e-5))
        for order, tuple_size, shape in cases:
            src = x[:n - n % tuple_size] if shape is None else x.view(shape)  # whole tuples (run j call 6 failed here)
            kw = dict(order=order, tuple_size=tuple_size) if shape is None else dict(axis=0)
            out = torch.empty_like(src)
            row = dict(dtype=str(dtype).split(".")[-1], n=n, order=order, tuple_size=tuple_size,
                       shape=list(shape) if shape else None)
            results = {}
            for blocked in (True, False):
                launch.BLOCKED_ORDERS = "always" if blocked else "never"
                fn = lambda: ps.scan(src, out=out, backend="triton", **kw)  # noqa: E731
                fn()
                torch.cuda.synchronize()
                sec = statistics.median(_time_cuda_events([fn], 10, 1e-5))
                row["blocked" if blocked else "general"] = copy / sec
                results[blocked] = out.clone()
            launch.BLOCKED_ORDERS = "measured"
            default = lambda: ps.scan(src, out=out, backend="triton", **kw)  # noqa: E731
            default()
            torch.cuda.synchronize()
            row["default"] = copy / statistics.median(_time_cuda_events([default], 10, 1e-5))
            launch.BLOCKED_ORDERS = "always"
            same = bool(torch.equal(results[True], results[False]))
            repeats_equal = True
            for _ in range(args.repeats):
                out.fill_(-7)
                ps.scan(src, out=out, backend="triton", **kw)
                repeats_equal &= bool(torch.equal(out, results[True]))
            row.update(equal_to_general=same, repeats_bitwise_equal=repeats_equal)
            failures += (not same) + (not repeats_equal)
            records.append(row)
            print(f"{row['dtype']:6s} order {order} tuple {tuple_size:2d} shape {str(shape):14s} "
                  f"blocked {row['blocked']:.2f}  general {row['general']:.2f}  default {row['default']:.2f} of copy  "
                  f"equal {same}  repeats {repeats_equal}", flush=True)
        del x, y
    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__}
    with open(args.json, "w") as f:
        json.dump({"meta": meta, "records": records}, f, indent=1)
    launch.BLOCKED_ORDERS = "measured"
    print(f"{failures} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
