"""Device diagnostics for the look-back kernels: where do results go wrong?"""
import sys
import torch
sys.path.insert(0, ".")
import prefixscan as ps
from prefixscan.backends.triton import tuning

def report(tag, x, cfg):
    tuning.set_override(cfg)
    try:
        y = ps.scan(x)
        torch.cuda.synchronize()
    except Exception as exc:
        print(tag, "RAISED", repr(exc)[:400]); return
    finally:
        tuning.set_override(None)
    ref = torch.cumsum(x, 0, dtype=x.dtype)
    bad = (y != ref).nonzero()
    if bad.numel() == 0:
        print(tag, "OK"); return
    i = int(bad[0]); blk = cfg.block
    d = (y[i] - ref[i]).item()
    tiles_bad = torch.unique(bad[:, 0] // blk)
    print(tag, f"{bad.numel()} bad; first {i} (tile {i // blk}, off {i % blk}) diff {d}; bad tiles {tiles_bad[:10].tolist()} of {tiles_bad.numel()}")
    # Is a bad tile off by a whole number of tile aggregates?
    t = i // blk
    agg = x.view(-1)[: (x.numel() // blk) * blk].view(-1, blk).sum(1, dtype=x.dtype)
    print("   aggregates near:", agg[max(0, t - 3): t + 2].tolist(), "diff at tile start", (y[t*blk] - ref[t*blk]).item())

for n in (1 << 16, 1 << 20, 1 << 24):
    x = torch.randint(-1000, 1000, (n,), device="cuda", dtype=torch.int32)
    for packed in (True, False):
        for win in (32, 1):
            report(f"int32 n={n} packed={packed} window={win}", x, tuning.TileConfig(8192, 8, win, packed=packed))
    x64 = x.to(torch.int64)
    report(f"int64 n={n} window=32", x64, tuning.TileConfig(8192, 8, 32))
