"""The early-stopping convention: validation splits and leave-one-out retrieval scores."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rankmetric.estimators._early_stopping import warn_if_below_reference
from rankmetric.training import (
    UntrainedModelWarning,
    per_query_retrieval,
    retrieval_score,
    sample_retrieval_items,
    split_validation,
)


def test_stratified_split_holds_out_a_share_of_every_class():
    codes = np.repeat(np.arange(5), 10)
    train, val = split_validation(codes, 0.2, "stratified", np.random.default_rng(0))
    assert np.intersect1d(train, val).size == 0 and train.size + val.size == codes.size
    assert np.array_equal(np.bincount(codes[val]), np.full(5, 2))


def test_group_split_holds_out_whole_classes_unseen_in_training():
    codes = np.repeat(np.arange(20), 3)
    codes[-1] = 20  # a class with one sample is never held out (it could not be retrieved)
    train, val = split_validation(codes, 0.25, "groups", np.random.default_rng(0))
    assert np.intersect1d(codes[train], codes[val]).size == 0
    assert np.unique(codes[val]).size == round(0.25 * 21)
    assert 20 in codes[train]
    assert np.array_equal(np.sort(np.concatenate([train, val])), np.arange(codes.size))


def test_zero_fraction_draws_nothing_and_keeps_everything():
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    train, val = split_validation(np.arange(6) % 2, 0.0, "groups", rng)
    assert val.size == 0 and train.size == 6 and rng.bit_generator.state == state


def test_group_split_with_too_few_classes_is_an_error():
    with pytest.raises(ValueError, match="validation_split='groups'"):
        split_validation(np.repeat(np.arange(3), 4), 0.5, "groups", np.random.default_rng(0))


def _brute_force(Z, codes, metric):
    out = []
    for q in range(len(Z)):
        others = [i for i in range(len(Z)) if i != q]
        d = [float(((Z[q] - Z[i]) ** 2).sum()) for i in others]
        order = [others[k] for k in np.argsort(d, kind="stable")]
        rel = [codes[i] == codes[q] for i in order]
        if not any(rel):
            out.append(np.nan)
        elif metric == "recall@1":
            out.append(float(rel[0]))
        else:
            hits, precisions = 0, []
            for rank, r in enumerate(rel, start=1):
                if r:
                    hits += 1
                    precisions.append(hits / rank)
            out.append(float(np.mean(precisions)))
    return np.array(out)


@pytest.mark.parametrize("metric", ["recall@1", "map"])
def test_leave_one_out_scores_match_the_definition(metric, monkeypatch):
    import rankmetric.training._scoring as module

    monkeypatch.setattr(module, "_CHUNK_ROWS", 7)  # several chunks
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(30, 3))
    codes = rng.integers(0, 8, size=30)
    got = per_query_retrieval(torch.as_tensor(Z), torch.as_tensor(codes), metric).numpy()
    np.testing.assert_allclose(got, _brute_force(Z, codes, metric), atol=1e-12)
    expected = np.nanmean(_brute_force(Z, codes, metric))
    assert retrieval_score(torch.as_tensor(Z), torch.as_tensor(codes), metric) == pytest.approx(
        expected
    )


def test_item_sample_keeps_whole_classes():
    codes = np.repeat(np.arange(100), 3)
    items = sample_retrieval_items(codes, np.random.default_rng(0), max_items=50)
    assert 0 < items.size <= 50
    assert np.all(np.bincount(codes[items])[np.unique(codes[items])] == 3)
    assert sample_retrieval_items(codes[:30], np.random.default_rng(0), 50).size == 30


def test_below_reference_warns_with_the_hint():
    with pytest.warns(UntrainedModelWarning, match="below the Euclidean.*try X"):
        assert warn_if_below_reference(
            0.1, 0.2, desc="M", where="the validation items", metric="recall@1", hint="try X"
        )
    assert not warn_if_below_reference(
        0.3, 0.2, desc="M", where="the validation items", metric="recall@1", hint=None
    )


def test_below_reference_within_the_noise_of_the_queries_does_not_warn():
    """One query of 1,000 below a perfect reference is noise; ten standard errors below is not."""
    kw = {"desc": "M", "where": "training items", "metric": "recall@1", "hint": None}
    assert not warn_if_below_reference(0.999, 1.0, n_items=1000, **kw)
    assert not warn_if_below_reference(0.49, 0.5, n_items=400, **kw)  # 0.4 standard errors
    with pytest.warns(UntrainedModelWarning):
        assert warn_if_below_reference(0.40, 0.5, n_items=400, **kw)  # 4 standard errors
