"""Long runs show where they are: ``prefixscan bench``'s bar fills with expected
time (steps weighted by their cost, the rate measured as they finish), with the
time left; ``prefixscan check`` shows the running feature and its cases."""

from __future__ import annotations

import io

import pytest

from prefixscan._progress import PIPE_INTERVAL, Progress, format_seconds


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_the_bar_follows_time_not_the_count_of_steps():
    """Nine cheap steps, then one as costly as all of them ten times over: after the
    first cheap step the run is 1% done, not 10%."""
    clock = Clock()
    bar = Progress(0, False, clock=clock)
    for _ in range(9):
        bar.plan(1.0, "cases")
    bar.plan(91.0, "cases")
    assert bar.eta() is None  # nothing measured yet
    clock.now = 1.0
    bar.update("step 1", 1)
    assert bar.eta() == pytest.approx(99.0)
    assert bar.fraction() == pytest.approx(0.01)
    clock.now = 9.0
    bar.update("step 9", 8)
    assert bar.eta() == pytest.approx(91.0)
    assert bar.fraction() == pytest.approx(9 / 100)
    clock.now = 50.0  # the long step has run 41 s of its expected 91
    assert bar.eta() == pytest.approx(50.0)


def test_each_group_is_predicted_from_its_own_measured_rate():
    clock = Clock()
    bar = Progress(0, False, clock=clock)
    for group in ("a", "a", "b", "b"):
        bar.plan(1.0, group)
    clock.now = 2.0
    bar.update("", 1)
    assert bar.eta() == pytest.approx(2.0 + 2 * 2.0)  # b not measured: the rate of every finished step
    clock.now = 4.0
    bar.update("", 1)
    clock.now = 14.0
    bar.update("", 1)  # b takes 10 s a step
    assert bar.eta() == pytest.approx(10.0)
    clock.now = 20.0
    assert bar.eta() == pytest.approx(4.0)
    clock.now = 30.0
    assert bar.eta() == 0.0  # late: never negative
    bar.update("", 1)
    assert bar.fraction() == 1.0


def test_pipe_lines_are_spaced_and_say_the_time_left():
    clock = Clock()
    out = io.StringIO()
    bar = Progress(0, True, out, clock=clock)
    for _ in range(20):
        bar.plan(1.0)
    for k in range(20):
        clock.now = float(k + 1)
        bar.update(f"step {k}", 1)
    lines = out.getvalue().splitlines()
    assert 20 / PIPE_INTERVAL - 1 <= len(lines) <= 20 / PIPE_INTERVAL + 2, lines
    assert "left" in lines[0] and "step 0" in lines[0]
    assert lines[-1].startswith("[" + "#" * 30 + "] 100%") and "left" not in lines[-1]


def test_terminal_line_is_rewritten_in_place_and_cleared():
    clock = Clock()
    out = Terminal()
    bar = Progress(2, True, out, clock=clock)
    clock.now = 1.0
    bar.update("one", 1)
    clock.now = 2.0
    bar.update("half way")
    assert out.getvalue().count("\r") == 2 and "\n" not in out.getvalue()
    bar.clear()
    assert out.getvalue().endswith("\r")


def test_format_seconds():
    assert format_seconds(42.4) == "42 s"
    assert format_seconds(185) == "3 min 05 s"
    assert format_seconds(3720) == "1 h 02 min"


def test_bench_plan_weighs_sizes_and_primitives_by_cost():
    """The default CPU run spent about 70% of its time on the primitives, which are
    10 of its 42 steps: their planned weight says so (the bar read 94% at 37 s of a
    107 s run when it counted steps), and a 2^24 case outweighs a 2^10 one."""
    from prefixscan.benchmark import progress_plan
    from prefixscan.benchmark.cases import SizeCase, default_sizes
    from prefixscan.benchmark.primitives import DEFAULT_LOG2

    cases = [SizeCase(d, 1 << e, e, 1, 1, 9) for d in ("int32", "float32", "int64", "float64")
             for e in default_sizes("cpu")]
    plan = progress_plan("cpu", cases, 5, DEFAULT_LOG2)
    assert len(plan) == len(cases) + 10
    primitives = sum(w for w, g in plan if g == "primitives")
    share = primitives / sum(w for w, _ in plan)
    assert 0.4 < share < 0.9, share
    weight = {(g, i): w for i, (w, g) in enumerate(plan)}
    assert weight[("2^24", 7)] > 5 * weight[("2^10", 0)]
    assert progress_plan("cpu", cases, 5, None) == plan[:len(cases)]


def test_bench_reports_progress_with_the_time_left(capsys, tmp_path):
    from prefixscan.cli import main

    assert main(["bench", "--quick", "--sizes", "8,10", "--dtypes", "int32", "--repeats", "1", "--no-plot",
                 "--out", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "100%" in err, err
    main(["bench", "--quick", "--sizes", "8,10", "--dtypes", "int32", "--repeats", "1", "--no-plot",
          "--no-progress", "--out", str(tmp_path)])
    assert capsys.readouterr().err == ""


def test_check_shows_the_running_feature_and_its_cases():
    from prefixscan.check import run_checks
    from prefixscan.check.cases import check_compact
    from prefixscan.check.context import Context, Device

    out = Terminal()
    results = run_checks(quick=True, seed=3, only="compact", progress=out)
    assert [r.status for r in results] == ["PASS"]
    text = out.getvalue()
    assert "[0/1, 0 s]  compact: starting" in text and "[1/1, " in text
    assert text.endswith("\r")  # the line is cleared at the end
    # Every case reports its label as it finishes (what the line shows, 10 times a second).
    ctx = Context(Device("cpu"), True, 3)
    seen = []
    ctx.on_case = seen.append
    check_compact(ctx)
    assert len(seen) == ctx.cases > 10
    assert seen[0].startswith("compact int32 n=")
