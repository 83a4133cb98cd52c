"""Measuring candidates on the device side (tuner/measure.py): result comparison,
and ``tune_workload`` end to end in the interpreter.

Fakes and fixtures: fakes.py and conftest.py of this folder.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

import prefixscan as ps  # noqa: E402
from prefixscan._environment import interpreter_mode  # noqa: E402
from prefixscan.backends.triton.planning import planner  # noqa: E402
from prefixscan.backends.triton.planning.tiles import default_config  # noqa: E402
from prefixscan.backends.triton.planning import keys  # noqa: E402
from prefixscan.backends.triton.tuner import measure, search  # noqa: E402


def test_same_is_bitwise_for_integers_and_tolerant_for_floats():
    a = torch.arange(100, dtype=torch.int64)
    b = a.clone()
    b[37] ^= 1 << 40
    assert measure.same_result(torch, a, a.clone()) and not measure.same_result(torch, b, a)
    f = torch.linspace(-5, 5, 101, dtype=torch.float32)
    assert measure.same_result(torch, f * (1 + 1e-6), f)
    g = f.clone()
    g[3] += 0.5
    assert not measure.same_result(torch, g, f)
    g = f.clone()
    g[7] = float("nan")
    assert not measure.same_result(torch, g, f)


# ---------------------------------------------------------------------------
# The device-side plumbing, end to end in the interpreter.

@pytest.mark.interpreter
@pytest.mark.skipif(not interpreter_mode(), reason="needs Triton's interpreter")
def test_tune_workload_verifies_real_scans_and_excludes_a_wrong_strategy(monkeypatch):
    """A 'persistent' scan that corrupts one element must be excluded; the real
    candidates pass verification against the decoupled look-back.  The tuner runs
    its candidates through the scan path (scan.run_scan), never prefixscan.scan."""
    from prefixscan.backends.triton.scan import route as scan_path

    real = scan_path.run_scan

    def corrupting(request, plan=False):
        out = real(request, plan)
        if request.config.strategy == "persistent":
            (out[0] if plan else out)[0].view(-1)[-1] += 1
        return out

    monkeypatch.setattr(scan_path, "run_scan", corrupting)
    monkeypatch.setattr(ps, "scan", lambda *a, **k: pytest.fail("the tuner called prefixscan.scan"))
    fast = {}

    def timer(fn):
        fn()
        return fast.get(planner.current_override(), 1.0)

    r = measure.tune_workload(torch.device("cpu"), [torch.int32], None, 1, 96, quick=True, timer=timer,
                              strategies=["decoupled_lookback", "chained", "persistent"])
    labels = {c.strategy for c in r.times}
    assert {"decoupled_lookback", "chained"} <= labels
    assert [c.strategy for c in r.excluded] == ["persistent"] and "wrong result" in r.excluded[
        keys.Candidate("persistent", default_config(4, False, 1, 96))]
    assert r.best.strategy == "decoupled_lookback" and r.best_deterministic.strategy == "chained"
    assert planner.current_override() is None


@pytest.mark.interpreter
@pytest.mark.skipif(not interpreter_mode(), reason="needs Triton's interpreter")
@pytest.mark.parametrize("accs, monoid", [([torch.int64], None), ([torch.float32] * 2, ps.AFFINE)])
def test_tune_workload_on_the_2d_layout(accs, monoid):
    """Interleaved streams scanned along axis 0, a sum (its reference checked
    against torch.cumsum) and the affine monoid on two fields."""
    seen = []

    def timer(fn):
        fn()
        seen.append(planner.current_override())
        default = default_config(sum(a.itemsize for a in accs), accs[0].is_floating_point, 4, 64)
        return 1.0 if planner.current_override() == default else 0.5

    r = measure.tune_workload(torch.device("cpu"), accs, monoid, 4, 64, quick=True, timer=timer,
                              strategies=["decoupled_lookback"], rounds=search.MIN_ROUNDS)
    assert not r.excluded and len(r.samples) >= 2 and r.best != r.default
    # every finalist: a first pass and the rounds; the winner and the default: a duel too,
    # decided in its first batch of rounds (a steady 2x gain)
    duel_rounds = r.duels[(r.best, r.default)].rounds
    assert duel_rounds == search.QUARTILE_ROUNDS
    assert all(len(r.samples[c]) == 1 + search.MIN_ROUNDS + (duel_rounds if c in (r.best, r.default) else 0)
               for c in r.finalists)
    assert None not in seen and planner.current_override() is None
