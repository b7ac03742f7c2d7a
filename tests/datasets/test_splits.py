"""``load_split``: one reader and one split rule for every ``--data`` of the command line."""

from __future__ import annotations

import numpy as np
import pytest

from rankmetric.datasets import load_features, load_split


def test_a_bundled_set_is_held_out_stratified_with_seed_0():
    from sklearn.datasets import load_iris
    from sklearn.model_selection import train_test_split

    split = load_split("iris", test_size=0.25)
    X, y = load_iris(return_X_y=True)
    X_tr, X_te, *_ = train_test_split(X, y, test_size=0.25, stratify=y, random_state=0)
    np.testing.assert_array_equal(split.X_test, X_te)
    assert split.how == "stratified 25% hold-out, seed 0" and split.dataset is not None


def test_a_feature_file_with_cameras_holds_identities_out(tmp_path):
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(10), 4)
    path = tmp_path / "f.npz"
    np.savez(path, X=rng.normal(size=(40, 3)), y=y, cameras=np.tile([0, 1], 20))
    split = load_split(path, test_size=0.3)
    assert not np.isin(split.y_test, split.y_train).any()
    assert len(split.cameras_test) == len(split.y_test) and split.split_test is None
    data = load_features(path)
    assert len(split.y_train) + len(split.y_test) == len(data.y)


def test_a_trial_file_holds_a_domain_out(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "t.npz"
    np.savez(path, X=rng.normal(size=(12, 3, 40)), y=np.tile([0, 1], 6),
             domains=np.repeat(["a", "b"], 6))  # fmt: skip
    split = load_split(path, spd=True, test_domain="b")
    assert split.X_train.shape == (6, 3, 3) and set(split.domains_test) == {"b"}
    with pytest.raises(ValueError, match=r"^test_domain 'c' must be one of \['a', 'b'\]"):
        load_split(path, spd=True, test_domain="c")
    with pytest.raises(ValueError, match="^test_domain needs a trial file"):
        load_split("iris", test_domain="a")


def test_a_trial_file_hold_out_keeps_each_trial_with_its_domain(tmp_path):
    from sklearn.model_selection import train_test_split

    from rankmetric.datasets import covariances

    rng = np.random.default_rng(1)
    X, y, domains = rng.normal(size=(20, 2, 30)), np.tile([0, 1], 10), np.arange(20).astype(str)
    np.savez(tmp_path / "t.npz", X=X, y=y, domains=domains)
    split = load_split(tmp_path / "t.npz", spd=True, test_size=0.3)
    _, X_te, _, y_te, d_tr, d_te = train_test_split(
        X, y, domains, test_size=0.3, stratify=y, random_state=0
    )
    np.testing.assert_array_equal(split.domains_test, d_te)
    np.testing.assert_array_equal(split.y_test, y_te)
    np.testing.assert_allclose(split.X_test, covariances(X_te, "scm"))
    assert sorted([*split.domains_train, *split.domains_test]) == sorted(domains)


def test_a_covariance_estimator_on_a_bundled_set(tmp_path, monkeypatch):
    monkeypatch.setenv("RANKMETRIC_DATA", str(tmp_path))  # an empty cache
    with pytest.raises(ValueError, match="rankmetric data fetch BasicMotions"):
        load_split("basic_motions", spd=True, covariance_estimator="lwf")
    for name in ("iris", "DEAP", "fmnist-regcov", "nosuch"):
        with pytest.raises(ValueError, match="^covariance_estimator applies to multichannel"):
            load_split(name, spd=True, covariance_estimator="lwf")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"data": "iris", "test_size": 1.5}, "^test_size must be between 0 and 1"),
        ({"data": "nosuch.npz", "spd": True}, "^data .*no such file"),
        ({"data": "iris", "spd": True, "covariance_estimator": "nosuch"}, "^covariance_estimator"),
    ],
)
def test_errors_start_with_the_parameter_at_fault(kwargs, message):
    with pytest.raises(ValueError, match=message):
        load_split(**kwargs)


def test_an_embeddings_file_with_a_test_part_and_cameras(tmp_path):
    from rankmetric.datasets import read_embeddings

    path = tmp_path / "e.npz"
    np.savez(path, embeddings=np.eye(4), labels=[0, 0, 1, 1], X_test=np.eye(4)[:2], y_test=[0, 1],
             cameras_test=[0, 1])  # fmt: skip
    found = read_embeddings(path)
    assert found.how == "X -> X_test" and list(found.cameras_test) == [0, 1]
    np.savez(path, X=np.eye(4), y=[0, 0, 1, 1], cameras=[0, 1])
    with pytest.raises(ValueError, match="cameras has 2 values for 4 items"):
        read_embeddings(path)
    with pytest.raises(ValueError, match="^labels goes with a .npy file"):
        read_embeddings(path, labels="y.npy")


def test_a_pair_file_in_index_form_with_test_pairs(tmp_path):
    from rankmetric.datasets import read_pair_file

    path = tmp_path / "p.npz"
    np.savez(path, X=np.eye(3), pairs=[[0, 1], [1, 2]], y=[1, -1], pairs_test=[[0, 2]],
             y_test=[1])  # fmt: skip
    data = read_pair_file(path)
    np.testing.assert_array_equal(data.stacked()[1], np.eye(3)[[1, 2]])
    assert data.test[0].shape == (1, 2, 3) and list(data.test[1]) == [1]
    np.savez(path, X=np.eye(3), pairs=[[0, 5]], y=[1])
    with pytest.raises(ValueError, match=r"indices must lie in \[0, 3\)"):
        read_pair_file(path).stacked()


# ------------------------------------------------------------------ a user's pair file, split


def _identity_pairs(n_identities=12, per=3, n_different=300, seed=0):
    """Items of ``n_identities`` identities, every same-identity pair and random different
    ones (row indices into X)."""
    rng = np.random.default_rng(seed)
    ids = np.repeat(np.arange(n_identities), per)
    X = rng.normal(size=(ids.shape[0], 4)) + 3 * ids[:, None]
    i, j = np.triu_indices(ids.shape[0], 1)
    same = ids[i] == ids[j]
    pick = rng.choice(np.flatnonzero(~same), n_different, replace=False)
    pairs = np.concatenate([np.stack([i[same], j[same]], 1), np.stack([i[pick], j[pick]], 1)])
    y = np.where(ids[pairs[:, 0]] == ids[pairs[:, 1]], 1, -1)
    return X, pairs, y, ids


@pytest.mark.parametrize("test_size", [0.2, 0.3, 0.5])
def test_holdout_pairs_keeps_every_test_item_out_of_training(test_size):
    from rankmetric.datasets import PairData, holdout_pairs

    X, pairs, y, ids = _identity_pairs()
    split = holdout_pairs(PairData(X, pairs, y, None, "mine.npz"), test_size)
    train_items = set(split.pairs.ravel().tolist())
    test_rows = {tuple(row) for row in split.test[0].reshape(-1, 4).tolist()}
    assert not test_rows & {tuple(X[k].tolist()) for k in train_items}
    # whole identities held out, about the share asked for, and every pair accounted for
    held_ids = {ids[k] for k in range(len(X)) if tuple(X[k].tolist()) in test_rows}
    assert len(held_ids) == max(1, int(np.ceil(test_size * 12 - 1e-9)))
    assert len(split.y) + len(split.test[1]) + split.n_left_out == len(y)
    assert {1, -1} <= set(split.y.tolist()) and {1, -1} <= set(split.test[1].tolist())
    assert (
        split.how
        == f"{test_size:.0%} of the items held out (whole groups of similar pairs, seed 0)"
    )


def test_holdout_pairs_same_split_in_both_forms_and_a_seeded_draw():
    from rankmetric.datasets import PairData, holdout_pairs

    X, pairs, y, _ = _identity_pairs()
    indexed = holdout_pairs(PairData(X, pairs, y, None, "-"), 0.3)
    stacked = holdout_pairs(PairData(None, X[pairs], y, None, "-"), 0.3)
    np.testing.assert_array_equal(X[indexed.pairs], stacked.pairs)
    np.testing.assert_array_equal(indexed.test[0], stacked.test[0])
    again = holdout_pairs(PairData(X, pairs, y, None, "-"), 0.3)
    np.testing.assert_array_equal(indexed.pairs, again.pairs)


def test_holdout_pairs_leaves_test_pairs_and_a_zero_share_alone_and_checks_the_share():
    from rankmetric.datasets import PairData, holdout_pairs

    X, pairs, y, _ = _identity_pairs()
    with_test = PairData(X, pairs, y, (X[pairs[:5]], y[:5]), "-", "pairs_test")
    assert holdout_pairs(with_test, 0.3) is with_test
    plain = PairData(X, pairs, y, None, "-")
    assert holdout_pairs(plain, 0.0) is plain
    for bad in (1.0, -0.1):
        with pytest.raises(ValueError, match=r"test_size must lie in \[0, 1\)"):
            holdout_pairs(plain, bad)


def test_holdout_pairs_draws_a_giant_group_last():
    """A group holding more items than the share is not drawn while smaller ones can make it."""
    from rankmetric.datasets import PairData, holdout_pairs

    X, pairs, y, _ = _identity_pairs(n_identities=12, per=3)
    big = np.arange(15, 36)  # identities 5-11 joined: 21 of 36 items, more than 30 %
    bridges = np.stack([np.arange(15, 33, 3), np.arange(18, 36, 3)], axis=1)
    for seed in range(5):  # whatever order the groups are drawn in
        rng = np.random.default_rng(seed)
        order = rng.permutation(len(X))  # items renumbered: another draw of the groups
        rank = np.argsort(order)
        data = PairData(X[order], rank[np.concatenate([pairs, bridges])],
                        np.r_[y, np.ones(len(bridges))], None, "-")  # fmt: skip
        split = holdout_pairs(data, 0.3)
        test_rows = {tuple(r) for r in split.test[0].reshape(-1, 4).tolist()}
        assert not test_rows & {tuple(X[k].tolist()) for k in big}
        assert len(test_rows) >= 0.3 * len(X)
