"""``prefixscan check`` (the self-check package): quick runs, ``--only``, which
NotImplementedError is a SKIP.
"""

from __future__ import annotations

import pytest

from prefixscan.cli import main


def test_check_quick(capsys):
    status = main(["check", "--quick", "--seed", "1234"])
    text = capsys.readouterr().out
    lines = [ln for ln in text.splitlines() if ln.startswith(("PASS", "FAIL", "SKIP"))]
    assert len(lines) >= 20, text
    assert not [ln for ln in lines if ln.startswith("FAIL")], text
    assert status == 0, text


def test_check_only_filter(capsys):
    assert main(["check", "--quick", "--only", "compact"]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("PASS")]
    assert len(lines) == 1 and "compact" in lines[0]


def test_check_skips_only_deliberate_not_implemented():
    """A NotImplementedError raised by prefixscan's own code is a SKIP; one
    coming from a library it calls (torch's missing kernels, say) is a FAIL."""
    from prefixscan.check import is_deliberate_limitation
    from prefixscan.check.cases import check_cpu_algorithms

    class _Ctx:
        class dev:  # noqa: N801
            name = "cuda"

    with pytest.raises(NotImplementedError) as info:
        check_cpu_algorithms(_Ctx())
    assert is_deliberate_limitation(info.value)

    def library_call():
        raise NotImplementedError("ufunc_add_CUDA not implemented for 'UInt16'")

    with pytest.raises(NotImplementedError) as info:
        library_call()
    assert not is_deliberate_limitation(info.value)
