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
    # few large classes: each keeps its share (whole classes would leave one, all at mAP 1)
    big = np.repeat(np.arange(4), 600)
    drawn = sample_retrieval_items(big, np.random.default_rng(0), max_items=500)
    assert np.bincount(big[drawn]).tolist() == [125] * 4


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


# --- n_iter_no_change, and patience, its name before 0.2 --------------------------------------


def _iterative_cases():
    from rankmetric import SSNE, WARCA, KernelWARCA, RPLEmbedding, SPDNetEmbedding
    from rankmetric.datasets import make_gaussian_clusters, make_spd_clusters

    vectors = make_gaussian_clusters(60, 4, 3, random_state=0)
    matrices = make_spd_clusters(60, n_channels=3, n_classes=3, random_state=0)
    loop = {"max_iter": 40, "validation_every": 2, "validation_fraction": 0.3, "random_state": 0}
    spd = {**loop, "hidden_sizes": 2, "device": "cpu", "held_out_check": False}
    vec = {**loop, "batch_size": 16, "held_out_check": False}
    return [
        (WARCA, {**vec, "max_sampling": 8, "tol": None}, vectors),
        (KernelWARCA, {**vec, "kernel": "rbf", "max_sampling": 8, "tol": None}, vectors),
        (SSNE, {**vec, "n_components": 4}, vectors),
        (SPDNetEmbedding, {**spd, "loss": "multi-similarity"}, matrices),
        (RPLEmbedding, spd, matrices),
    ]


ITERATIVE = _iterative_cases()


def _fit_quietly(cls, params, data):
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=UserWarning)  # untrained start kept, etc.
        return cls(**params).fit(*data)


@pytest.mark.parametrize(
    ("cls", "params", "data"), ITERATIVE, ids=lambda c: getattr(c, "__name__", "")
)
def test_patience_warns_and_fits_as_n_iter_no_change(cls, params, data):
    with pytest.warns(FutureWarning, match="'patience' was renamed 'n_iter_no_change'"):
        by_old = _fit_quietly(cls, {**params, "patience": 1}, data)
    by_new = _fit_quietly(cls, {**params, "n_iter_no_change": 1}, data)
    assert by_old.n_iter_ == by_new.n_iter_ < params["max_iter"]  # stopped on the patience
    np.testing.assert_array_equal(by_old.transform(data[0]), by_new.transform(data[0]))
    assert _fit_quietly(cls, {**params, "n_iter_no_change": None}, data).n_iter_ == 40


@pytest.mark.parametrize(
    ("cls", "params", "data"), ITERATIVE, ids=lambda c: getattr(c, "__name__", "")
)
def test_patience_and_n_iter_no_change_survive_get_params_and_clone(cls, params, data):
    from sklearn.base import clone

    assert cls().get_params()["patience"] == "deprecated"
    est = cls(patience=3)
    assert clone(est).get_params()["patience"] == 3
    assert est._param("n_iter_no_change") == 3
    assert clone(cls(n_iter_no_change=4)).set_params(patience=2)._param("n_iter_no_change") == 2
    assert cls(n_iter_no_change=4)._param("n_iter_no_change") == 4


@pytest.mark.filterwarnings("ignore:.*'patience' was renamed:FutureWarning")
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", ["patience", "n_iter_no_change"])
def test_grid_search_over_either_name(name):
    from sklearn.model_selection import GridSearchCV
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline

    cls, params, data = ITERATIVE[0]
    pipeline = make_pipeline(cls(**params), KNeighborsClassifier(3))
    search = GridSearchCV(pipeline, {f"warca__{name}": [1, None]}, cv=2).fit(*data)
    assert search.best_params_[f"warca__{name}"] in (1, None)
    assert search.best_estimator_[0]._param("n_iter_no_change") in (1, None)


def test_a_model_saved_with_patience_loads(tmp_path):
    from rankmetric import load_model

    cls, params, data = ITERATIVE[0]
    with pytest.warns(FutureWarning, match="'patience' was renamed"):
        model = _fit_quietly(cls, {**params, "patience": 2}, data)
    model.save(tmp_path / "m.npz")
    loaded = load_model(tmp_path / "m.npz")
    assert loaded.get_params()["patience"] == 2
    np.testing.assert_array_equal(loaded.transform(data[0]), model.transform(data[0]))
