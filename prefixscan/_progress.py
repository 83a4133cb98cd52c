"""Progress lines on stderr for the long commands (``prefixscan bench`` and
``prefixscan check``), with an estimate of the time left.

A run declares its steps up front, each with a *weight* (its expected cost in
any unit, e.g. elements x repeats) and a *group* (steps that cost alike per
unit of weight: the same size, the primitives).  As steps finish, the time
each took is measured, and the time left is the sum over the remaining steps
of their weight times the measured seconds per unit of weight of their group
(of all finished steps while the group has none finished yet).  So the bar
fills with time, not with the count of steps, and the estimate corrects itself
as the run goes: the expected costs only need to be right relative to each
other within a group.

On a terminal the line is rewritten in place; on a pipe (a CI log) a line is
written at most every :data:`PIPE_INTERVAL` seconds.  Leaf module: imports
nothing of prefixscan.
"""

from __future__ import annotations

import shutil
import sys
import time
from dataclasses import dataclass

__all__ = ["Progress", "format_seconds", "PIPE_INTERVAL"]

#: Seconds between two lines on a pipe.
PIPE_INTERVAL = 5.0
#: Seconds between two rewrites of the line on a terminal.
TTY_INTERVAL = 0.1


@dataclass
class _Step:
    weight: float
    group: str
    seconds: float | None = None  # measured once finished


def format_seconds(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``1 h 02 min``."""
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, sec = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {sec:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


class Progress:
    """Progress of a run of planned steps, on ``stream`` (default stderr).

    ``Progress(total, enabled)`` plans ``total`` steps of weight 1;
    :meth:`plan` adds steps of other weights and groups.  :meth:`update` shows
    what runs now (``advance=k`` first finishes the next ``k`` steps);
    :meth:`eta` is the estimate of the seconds left (None before any step has
    finished); ``estimate=False`` shows steps done and time spent only.
    ``clock`` replaces ``time.perf_counter`` (tests)."""

    def __init__(self, total: int = 0, enabled: bool = True, stream=None, *, clock=None, estimate: bool = True):
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.tty = enabled and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.clock = clock if clock is not None else time.perf_counter
        self.steps: list[_Step] = [_Step(1.0, "") for _ in range(max(0, int(total)))]
        self.done = 0  # steps finished, in order
        self.t0 = self.clock()
        self.step_start = self.t0
        self.last_write = -float("inf")
        self.width = 0
        self.label = ""
        self.estimate = estimate  # False: no time left shown (steps of unknown relative cost)

    # planning ----------------------------------------------------------------
    def plan(self, weight: float, group: str = "") -> None:
        """Add a step of expected cost ``weight`` (> 0) in ``group``."""
        self.steps.append(_Step(max(float(weight), 1e-12), group))

    @property
    def total(self) -> int:
        return len(self.steps)

    # progress ----------------------------------------------------------------
    def update(self, label: str, advance: int = 0) -> None:
        """Show ``label``; ``advance`` > 0 finishes that many steps first (the time
        since the last finished step is shared among them by weight)."""
        if advance > 0:
            self._finish(advance)
        self.label = label
        self._show(force=advance > 0 and self.done >= self.total)

    def _finish(self, count: int) -> None:
        now = self.clock()
        finished = self.steps[self.done:self.done + count]
        spent = now - self.step_start
        weight = sum(s.weight for s in finished) or 1.0
        for s in finished:
            s.seconds = spent * s.weight / weight
        self.done += len(finished)
        self.step_start = now

    def _rate(self, group: str) -> float | None:
        """Measured seconds per unit of weight of ``group``'s finished steps (of
        every finished step while the group has none); None before any."""
        for wanted in (group, None):
            done = [s for s in self.steps[:self.done] if wanted is None or s.group == wanted]
            weight = sum(s.weight for s in done)
            if done and weight > 0:
                return sum(s.seconds for s in done) / weight
        return None

    def eta(self) -> float | None:
        """Seconds left: every unfinished step's weight at its group's measured rate,
        less the time the current step has run already."""
        if self.done == 0:
            return None
        rates: dict[str, float | None] = {}
        left = 0.0
        for k, s in enumerate(self.steps[self.done:]):
            if s.group not in rates:
                rates[s.group] = self._rate(s.group)
            expected = s.weight * (rates[s.group] or 0.0)
            if k == 0:
                expected = max(0.0, expected - (self.clock() - self.step_start))
            left += expected
        return left

    def fraction(self) -> float:
        """The part of the run done, in expected time (in steps before any has finished)."""
        if self.done >= self.total:
            return 1.0
        left = self.eta()
        if left is None:
            return self.done / max(1, self.total)
        elapsed = self.clock() - self.t0
        return elapsed / (elapsed + left) if elapsed + left > 0 else 0.0

    def text(self) -> str:
        """The progress line: bar, percent of the expected time, elapsed, time left, label."""
        frac = min(1.0, max(0.0, self.fraction()))
        filled = int(30 * frac)
        elapsed = self.clock() - self.t0
        left = self.eta()
        when = f"{format_seconds(elapsed)}"
        if not self.estimate:
            return f"[{self.done}/{self.total}, {when}]  {self.label}"
        if self.done < self.total:
            when += f", about {format_seconds(left)} left" if left is not None else ", time left unknown yet"
        return f"[{'#' * filled}{'-' * (30 - filled)}] {100 * frac:3.0f}%  {when}  {self.label}"

    def _show(self, force: bool = False) -> None:
        if not self.enabled:
            return
        now = self.clock()
        interval = TTY_INTERVAL if self.tty else PIPE_INTERVAL
        if not force and now - self.last_write < interval:
            return
        self.last_write = now
        text = self.text()
        if self.tty:
            # One row: a wrapped line could not be rewritten in place.
            text = text[:max(20, shutil.get_terminal_size().columns - 1)]
            pad = max(0, self.width - len(text))
            self.stream.write("\r" + text + " " * pad)
            self.width = len(text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def clear(self) -> None:
        """Erase the line on a terminal (before other output is printed)."""
        if self.enabled and self.tty and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0
            self.last_write = -float("inf")

    def close(self) -> None:
        if self.enabled and self.tty and self.width:
            self.stream.write("\n")
            self.stream.flush()
            self.width = 0
