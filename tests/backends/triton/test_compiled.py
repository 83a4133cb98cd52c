"""Properties of the compiled kernels that the interpreter cannot show.

The kernels are compiled for sm_90 without a GPU by the tools of ``tools/``
(``compile_report.py``, ``sass_report.py``), run as subprocesses from the
repository root because under ``TRITON_INTERPRET=1`` ``triton.jit`` returns an
interpreted function that cannot be compiled.

Status words of the look-back must be read by exactly one operation per read in
the source: Triton's layout pass once duplicated a volatile window load of the
2-D look-back into two loads in two layouts (flags from one, values from the
other), and a word that changed between them gave wrong prefixes on the H200
now and then.  Reads are atomics now, which the compiler never duplicates.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("triton")

ROOT = Path(__file__).resolve().parents[3]


def _run_tool(*args: str) -> str:
    """Run a tool of tools/ from the repository root, outside the interpreter mode."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_every_builtin_operator_compiles():
    """Compiled Triton reads no module global but a constexpr; the interpreter reads
    any, so a combine can pass every interpreter test and fail on the GPU."""
    result = json.loads(_run_tool("tools/compile_report.py", "--builtin-ops"))
    assert result and all(v == "ok" for v in result.values()), result


def test_every_accumulator_type_compiles():
    """Each look-back kernel compiles for every accumulator type (int8 ... float64): order 2
    of an int8 scan multiplied its carry by the constexpr tile size, which compiled
    Triton refuses for int8 (16384 out of range) and the interpreter computes."""
    result = json.loads(_run_tool("tools/compile_report.py", "--dtypes"))
    assert len(result) == 63 and all(v == "ok" for v in result.values()), result


def test_every_recurrence_variant_compiles():
    """The recurrence kernel compiles for sm_90 in each mode (forward, fused backward,
    lane maps only), both tilings (walk plain and software-pipelined, look-back), both
    orientations, real and complex fields, float32 and bfloat16 data, real log decays in float32 (the
    pipelined walk and the look-back, and their split scans; forward direction, non-deterministic window: the other flags change
    index arithmetic and the look-back's window only), and packed sequences' restart flags
    (float32, linear and log: the forward's pipelined walk, the backward's look-back), and
    the backward's adjoint from after the end (its pipelined walk and look-back).
    The plain modes are lowered to LLVM, the variations through Triton's GPU passes (where
    their type errors are); ptxas runs in the GPU tests.  The fused backward's shifted reads
    moved in registers ("edge": ``RecurrencePlan.shift``) through the GPU passes."""
    result = json.loads(_run_tool("tools/compile_report.py", "--recurrence"))
    assert len(result) == 78 and all(v == "ok" for v in result.values()), result
    assert sum("-edge-" in label for label in result) == 4
    assert sum(label.split("-")[2] == "log" for label in result) == 18
    assert sum("-split-" in label for label in result) == 6
    assert sum("-restart-" in label for label in result) == 4
    assert sum("-final-" in label for label in result) == 20


def test_recurrence_backward_edge_form_moves_its_vectors_in_registers():
    """The fused backward's "edge" form (``RecurrencePlan.shift``) as a launch specializes
    it, time contiguous (tiles of 1 and 4 lanes, and the look-back), float32 and bfloat16,
    lowered to PTX: no layout conversion and no shared memory, shuffle or barrier more than
    the load form's (the vectors are split and joined in each thread's registers), the
    shifted a and h read as 16-byte vectors (one more a thread's vector of a and of h)
    and one scalar load a vector for the element past its edge, where the load form
    reads every shifted element alone."""
    result = json.loads(_run_tool("tools/recurrence_shift_report.py", "--ptx", "--json", "--shift", "load",
                                  "--shift", "edge", "--shape", "time", "--shape", "time-4-lanes",
                                  "--shape", "lookback"))
    assert len(result) == 12, sorted(result)
    for label, edge in result.items():
        if not label.endswith("-edge"):
            continue
        load = result[label[:-len("edge")] + "load"]
        vector = 8 if "bfloat16" in label else 4
        assert edge["vectors"] == [vector, vector] and load["vectors"] == [1, 1], (label, edge)
        for key in ("convert_layout", "ld.shared", "st.shared", "shfl", "bar", "gather"):
            assert edge[key] == load[key], (label, key, edge[key], load[key])
        vectors = edge["ld.global.v4"] - load["ld.global.v4"]  # a thread's vectors of a and h
        assert vectors > 0 and vectors % 2 == 0, (label, edge, load)
        assert load["ld.global.scalar"] - edge["ld.global.scalar"] == vectors * (vector - 1), (label, edge, load)


def test_status_words_are_read_by_atomics_only():
    # The tiles whose look-back had been duplicated (chained and windowed 2-D, 8 warps,
    # K = 3 padded to 4 columns), 1-D ones for contrast, the masked-columns kernel.
    counts = json.loads(_run_tool("tools/compile_report.py", "--status-reads").strip().splitlines()[-1])
    for name, c in counts.items():
        # Tagged words only: no volatile load at all.  Atomic adds: the tile
        # counter and one status read per copy of the tile code (full / partial),
        # whatever the words per entry (read together: one round trip, not one per word).
        assert c["volatile_loads"] == 0, (name, c)
        assert c["atomic_adds"] == 3, (name, c)


@pytest.mark.parametrize("case", [("int32", "1", "5"), ("int64", "1", "5"), ("int32", "8", "1")])
def test_blocked_kernel_keeps_registers_at_lengths_not_a_multiple_of_16(case):
    """blocked.orders_kernel compiled (sm_90, launch defaults) for a length that is not a
    multiple of 16 has no stack frame: a partial tile's masks once kept ~100 element offsets
    live from the tile's entry to its store and spilled them in every tile (int32 tuple
    size 5: 408 bytes, order 8: 24 bytes at 255 registers; docs/design/tuple-sizes.md)."""
    report = _run_tool("tools/sass_report.py", *case, "--odd-length").splitlines()[0]
    assert " STACK:0 " in report and " LOCAL:0 " in report, report


def test_triton_specializes_integers_inside_tuples():
    """What the launch key relies on (runtime/launch.py): Triton keeps ``do_not_specialize``
    for top-level integers only; inside a tuple a 1 is a constant and a multiple of 16 is
    marked so, whatever the parameter's ``do_not_specialize`` says.  Should a Triton
    release change this, the key and this test change with it."""
    result = json.loads(_run_tool("tools/compile_report.py", "--tuple-specialization"))
    assert result["counts"] == result["sizes"] == [["i32", "D"], ["constexpr", 1], ["i32", ""]]
    assert result["n"] == [["constexpr", 1]] and result["m"] == [["i32", None]]
