"""Documentation examples are files the tests run."""

import pathlib
import runpy

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def test_quickstart(capsys):
    runpy.run_path(str(EXAMPLES / "quickstart.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "[ 1  3  6 10 15 21 28 36]"
    assert "[136 135 133 130 126 121 115 108]" in out  # reverse with init at the far end
    assert "[ 1  3  6  4  9  6 13 21]" in out  # segmented
    assert "[3 6]" in out  # compacted
    assert out.rstrip().endswith("[1 4 7 0 3 6 2 5]")  # argsort, descending, stable
