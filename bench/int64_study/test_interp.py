"""Interpreter correctness check of the variants: TRITON_INTERPRET=1 python test_interp.py [module ...]"""
import os, sys, importlib, time
os.environ.setdefault("TRITON_INTERPRET", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import numpy as np, torch

def check(mod_name, dtype, n, block, warps, window, calls=2, **kw):
    mod = importlib.import_module(mod_name)
    rng = np.random.default_rng(n + block)
    s = mod.Scanner(n, dtype, "cpu", block=block, warps=warps, window=window, **kw)
    for c in range(calls):  # several calls: epochs and counter offsets
        if dtype in (torch.int64, torch.int32):
            hi = 2**62 if dtype == torch.int64 else 2**20  # int32: no wrap (the interpreter sums in numpy and rejects int32 overflow)
            a = rng.integers(-hi, hi, size=n, dtype=np.int64 if dtype == torch.int64 else np.int32)
            x = torch.from_numpy(a)
            ref = torch.from_numpy(np.cumsum(a, dtype=a.dtype))  # wraps like the kernel
        else:
            a = rng.standard_normal(n).astype(np.float64 if dtype == torch.float64 else np.float32)
            x = torch.from_numpy(a)
            ref = torch.from_numpy(np.cumsum(a.astype(np.float64)))
        y = torch.empty_like(x)
        s(x, y)
        if dtype in (torch.int64, torch.int32):
            ok = torch.equal(y, ref)
            err = int((y != ref).sum())
        else:
            err = float(((y.double() - ref).abs() / (ref.abs() + 1)).max())
            ok = err < (1e-12 if dtype == torch.float64 else 1e-4)
        if not ok:
            return False, f"call {c}: err {err}"
    return True, ""

CASES = {
    "k0_lib": [dict()],
    "k2_prefetch": [dict(status=2, grid=3), dict(status=0, grid=2, debug_p_every=5), dict(status=2, grid=1, debug_p_every=3)],
    "k1_full": [dict(status=2), dict(status=0), dict(status=2, scan=1), dict(status=2, debug_p_every=5),
                dict(status=0, debug_p_every=5)],
}
def main(mods):
    bad = 0
    for m in mods:
        for kw in CASES[m]:
            for dtype in (torch.int64, torch.float64, torch.int32):
                kw2 = dict(kw)
                if dtype == torch.int32 and kw2.get("status") == 2:
                    kw2["status"] = 1
                for n, block, window in ((1000, 64, 4), (1024, 64, 2), (40, 64, 4), (3 * 128 + 1, 128, 8)):
                    t = time.time()
                    ok, msg = check(m, dtype, n, block, 1, window, **kw2)
                    bad += not ok
                    print(f"{m:14s} {str(dtype):14s} n={n:5d} b={block:3d} win={window} {kw2}: {'ok' if ok else 'FAIL ' + msg} ({time.time()-t:.1f}s)", flush=True)
    print("ALL OK" if bad == 0 else f"{bad} FAILED")
    return bad
if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or list(CASES)))
