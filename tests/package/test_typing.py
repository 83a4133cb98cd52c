"""The public API is typed: every public function and method annotates all its
parameters and its return, the annotations resolve (``typing.get_type_hints``),
and the ``Literal`` names are the ones the checks accept.  The wheel's
``py.typed`` marker: tests/package/test_packaging.py."""

from __future__ import annotations

import inspect
import typing

import numpy as np
import pytest

import prefixscan
import prefixscan.testing
from prefixscan import _typing, dispatch
from prefixscan._normalize import ALGORITHMS, STRATEGIES

#: Example monoids' ``combine`` functions: they compile into the GPU kernels, whose
#: code generator visits the annotations of a function's source, so they keep none.
COMBINE_FUNCTIONS = {"prefixscan.testing.affine", "prefixscan.testing.matmul2", "prefixscan.testing.add_pair",
                     "prefixscan.testing.first_nonzero"}


def _public_callables():
    """(qualified name, function) of every public function and public method of a
    public class of ``prefixscan`` and ``prefixscan.testing``."""
    for module in (prefixscan, prefixscan.testing):
        for name in module.__all__:
            obj = getattr(module, name)
            qualified = f"{module.__name__}.{name}"
            if inspect.isfunction(obj):
                yield qualified, obj
            elif inspect.isclass(obj):
                for member, value in vars(obj).items():
                    if inspect.isfunction(value) and (not member.startswith("_") or member in ("__init__",
                                                                                                 "__call__")):
                        yield f"{qualified}.{member}", value


PUBLIC = dict(_public_callables())


def test_the_public_api_is_found():
    for name in ("prefixscan.scan", "prefixscan.make_scan", "prefixscan.Scan.__call__", "prefixscan.Scan.plan",
                 "prefixscan.compact", "prefixscan.Monoid.__init__", "prefixscan.testing.reference_scan"):
        assert name in PUBLIC, name


@pytest.mark.parametrize("name", sorted(set(PUBLIC) - COMBINE_FUNCTIONS))
def test_every_parameter_and_return_is_annotated(name):
    function = PUBLIC[name]
    signature = inspect.signature(function)
    missing = [p.name for p in signature.parameters.values()
               if p.annotation is inspect.Parameter.empty and p.name != "self"]
    assert not missing, f"{name}: parameters without an annotation: {missing}"
    assert signature.return_annotation is not inspect.Signature.empty, f"{name}: no return annotation"
    typing.get_type_hints(function)  # every annotation resolves at run time


def test_literal_names_are_the_checked_names():
    assert typing.get_args(_typing.AlgorithmName) == ALGORITHMS
    assert typing.get_args(_typing.StrategyName) == STRATEGIES
    assert set(typing.get_args(_typing.BackendName)) == set(dispatch.BACKEND_NAMES)
    assert set(typing.get_args(_typing.OpLike)) == {str, prefixscan.Monoid, np.ufunc}


def test_return_types_name_what_comes_back():
    hints = {name: typing.get_type_hints(PUBLIC[f"prefixscan.{name}"])["return"]
             for name in ("make_scan", "partition", "compact", "cumsum", "linear_recurrence")}
    assert hints["make_scan"] is prefixscan.Scan
    assert typing.get_origin(hints["partition"]) is tuple and len(typing.get_args(hints["partition"])) == 2
    assert tuple[_typing.ArrayOrFields, _typing.ArrayLike] in typing.get_args(hints["compact"])
    assert tuple[_typing.ArrayLike, _typing.ArrayLike] in typing.get_args(hints["linear_recurrence"])
    values, count = prefixscan.partition(np.arange(5), np.arange(5) > 2)  # what the annotation says
    assert values.shape == (5,) and int(count) == 2
