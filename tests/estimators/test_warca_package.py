"""The WARCA family is one package, and its squared distances come from ``_distances``.

Claims of ``docs/architecture.md`` about this area, tested: ``rankmetric.estimators.warca`` is a
package holding linear and kernel WARCA, what they share, the solver and the validation; the
shared code is plain functions and one base class (no single-use mixin, no state read back with
``getattr``); the WARP engine and the WARCA package compute no squared distance themselves.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest

import rankmetric
from rankmetric.estimators import warca

SRC = Path(rankmetric.__file__).parent
PACKAGE = SRC / "estimators" / "warca"
#: The WARP engine's modules and the kernels: every squared distance there comes from _distances.
DISTANCE_USERS = [
    *sorted(PACKAGE.glob("*.py")),
    SRC / "losses" / "warp.py",
    SRC / "losses" / "_warp_sampling.py",
    SRC / "losses" / "_warp_terms.py",
    SRC / "kernels.py",
]
#: Spellings of a squared-distance kernel: the Gram form's products and the difference form.
DISTANCE_KERNEL = re.compile(
    r"\baddmm\b|\bbaddbmm\b|\bcdist\b|\.square\(\)\.sum\(|\*\* ?2\)\.sum\(|torch\.mul\((\w+), \1"
)


def test_the_family_is_one_package_with_the_public_names():
    assert hasattr(warca, "__path__")
    for module in ("linear", "kernel", "base", "solver", "validation"):
        importlib.import_module(f"rankmetric.estimators.warca.{module}")
    assert warca.WARCA is rankmetric.WARCA
    assert warca.KernelWARCA is rankmetric.KernelWARCA
    assert rankmetric.estimators.KernelWARCA is warca.KernelWARCA
    assert not list((SRC / "estimators").glob("*warca*.py"))  # no module beside the package


@pytest.mark.parametrize("path", sorted(PACKAGE.glob("*.py")), ids=lambda p: p.name)
def test_no_mixin_and_no_state_read_back(path):
    tree = ast.parse(path.read_text())
    classes = [node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    assert not [name for name in classes if name.endswith("Mixin")]
    assert set(classes) <= {"BaseWARCA", "WARCA", "KernelWARCA"}
    getattrs = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and isinstance(node.args[0], ast.Name)
        and node.args[0].id in {"self", "est"}
    ]
    assert not getattrs


@pytest.mark.parametrize("path", DISTANCE_USERS, ids=lambda p: p.name)
def test_squared_distances_come_from_the_one_kernel_module(path):
    code = "\n".join(
        line.split("#")[0]
        for line in inspect.cleandoc(path.read_text()).splitlines()
        if not line.lstrip().startswith(("#", ">>>"))
    )
    assert not DISTANCE_KERNEL.findall(code), f"{path.name} computes a squared distance itself"


def test_the_pattern_sees_each_spelling():
    for line in ("torch.addmm(a, b, c)", "x.square().sum(-1)", "((a - b) ** 2).sum(-1)",
                 "torch.mul(d, d, out=buf)", "torch.cdist(a, b)"):  # fmt: skip
        assert DISTANCE_KERNEL.search(line), line
    assert not DISTANCE_KERNEL.search("torch.mul(a, b)")


def test_embedded_once_computes_all_rows_once_with_the_gradient():
    """A step's ``embed(None)``: computed on the first call (with its graph, even under
    ``no_grad``), reused detached by the detection and with the gradient by the loss."""
    import torch

    from rankmetric.estimators.warca.solver import embedded_once

    g = torch.Generator().manual_seed(0)
    X, W = torch.randn(20, 5, generator=g), torch.randn(3, 5, generator=g).requires_grad_()
    calls = []

    def embed(indices):
        calls.append(indices)
        return (X if indices is None else X.index_select(0, indices)) @ W.T

    step = embedded_once(embed)
    with torch.no_grad():
        detached = step(None)
        rows = step(torch.tensor([2, 5]))
    assert not detached.requires_grad and not rows.requires_grad
    everything = step(None)
    assert everything.requires_grad and torch.equal(everything, detached)
    assert [c is None for c in calls] == [True, False]  # all rows once; rows by index each time
    everything.square().sum().backward()
    expected = torch.autograd.grad((X @ W.T).square().sum(), W)[0]
    assert torch.equal(W.grad, expected)
