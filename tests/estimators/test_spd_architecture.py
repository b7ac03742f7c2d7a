"""The SPD family: one package, one congruence, its claims of ``docs/architecture.md``."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import torch

SRC = Path(__file__).resolve().parents[2] / "src" / "rankmetric"
# ``symmetrize(W @ X @ W)``: a congruence written out instead of calling geometry's
_CONGRUENCE = re.compile(r"symmetrize\(\s*(\w+)\s*@\s*[\w\[\]]+\s*@\s*\1\s*\)")


def test_the_spd_family_is_one_package_and_keeps_its_public_paths():
    import rankmetric
    import rankmetric.estimators as estimators
    from rankmetric.estimators import spd

    names = ("SPDNetEmbedding", "RPLEmbedding", "MDM")
    assert all(getattr(rankmetric, n) is getattr(spd, n) is getattr(estimators, n) for n in names)
    flat = {p.name for p in (SRC / "estimators").glob("*.py")}
    assert not {"spdnet.py", "rpl.py", "mdm.py", "_untrained.py"} & flat
    assert not [name for name in flat if name.startswith("_spd_")]


def test_congruence_is_written_once_in_geometry():
    """Every ``W X W`` of the package calls ``geometry.congruence`` (tangent.py defines it)."""
    found = []
    for path in SRC.rglob("*.py"):
        for match in _CONGRUENCE.finditer(path.read_text()):
            found.append(f"{path.relative_to(SRC)}: {match.group(0)}")
    assert found == ["geometry/tangent.py: symmetrize(W @ X @ W)"]


def test_the_spd_estimators_import_no_private_name_of_another_package():
    """``estimators/spd`` reaches geometry, models and preprocessing through public names only."""
    private = []
    for path in (SRC / "estimators" / "spd").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level >= 3 and node.module:
                for alias in node.names:
                    parts = [*node.module.split("."), alias.name]
                    if any(p.startswith("_") and not p.startswith("__") for p in parts[1:]):
                        private.append(f"{path.name}: {node.module}.{alias.name}")
    assert private == []


def test_the_spd_whitening_is_geometrys_congruence_by_the_mean_whitening():
    from rankmetric import SPDNetEmbedding
    from rankmetric.datasets import make_spd_clusters
    from rankmetric.geometry import congruence, mean_whitening, riemannian_mean, whiten

    X, y = make_spd_clusters(30, n_channels=3, n_classes=3, random_state=0)
    X_t = torch.as_tensor(X)
    est = SPDNetEmbedding(max_iter=0, device="cpu", held_out_check=False).fit(X, y)
    W = mean_whitening(X_t)
    np.testing.assert_array_equal(est.whitening_, W.numpy())
    np.testing.assert_array_equal(
        congruence(X_t, W).numpy(), whiten(X_t, riemannian_mean(X_t)).numpy()
    )
