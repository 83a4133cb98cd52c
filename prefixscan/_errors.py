"""One-line error messages for reports (a leaf module: imports nothing of prefixscan).

Used by ``prefixscan check`` and ``prefixscan bench``, which print one line per
failed case.
"""

from __future__ import annotations

__all__ = ["short_error"]


def short_error(exc: BaseException) -> str:
    """``Type: message`` on one line; a long message keeps its first and last
    lines, with words in them (Triton's CompilationError puts the cause last and
    ends with a caret line)."""
    lines = [ln.strip() for ln in str(exc).splitlines() if any(ch.isalnum() for ch in ln)]
    if not lines:
        return type(exc).__name__
    text = lines[0] if len(lines) == 1 else f"{lines[0]} ... {lines[-1]}"
    return f"{type(exc).__name__}: {text}"[:500]
