"""One table of SPD metric names: pyRiemann's aliases resolve everywhere a metric is named."""

import pytest
import torch

from rankmetric.geometry import METRIC_ALIASES, canonical_metric, geodesic


def test_pyriemann_names_resolve():
    assert canonical_metric("riemann") == "airm"
    assert canonical_metric("LogEuclid") == "log_euclidean"
    assert canonical_metric("airm", ("airm",)) == "airm"
    assert set(METRIC_ALIASES.values()) == {"airm", "log_euclidean", "euclidean"}
    fn = lambda a, b: a  # noqa: E731
    assert canonical_metric(fn) is fn


def test_unknown_or_disallowed_names_raise_naming_the_choices():
    with pytest.raises(ValueError, match="riemann"):
        canonical_metric("wasserstein", ("airm", "log_euclidean"), name="distance")
    with pytest.raises(ValueError, match="distance"):
        canonical_metric("euclidean", ("airm",), name="distance")
    with pytest.raises(ValueError):
        canonical_metric(3)


def test_geodesic_accepts_aliases():
    A = torch.diag(torch.tensor([1.0, 2.0], dtype=torch.float64))
    B = torch.diag(torch.tensor([3.0, 0.5], dtype=torch.float64))
    for alias, name in [("riemann", "airm"), ("logeuclid", "log_euclidean")]:
        torch.testing.assert_close(geodesic(A, B, 0.3, metric=alias), geodesic(A, B, 0.3, name))
