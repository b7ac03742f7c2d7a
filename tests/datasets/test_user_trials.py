"""``read_trial_file``: a user's raw trials under their own names (the feature files' aliases)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rankmetric.cli import main
from rankmetric.datasets.user_features import ALIASES
from rankmetric.datasets.user_trials import TRIAL_ALIASES, read_trial_file


def _arrays(n=12, c=3, t=40, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, c, t)), np.tile(["a", "b"], n // 2), np.repeat(["s1", "s2"], n // 2)


def test_the_feature_files_aliases_are_kept():
    for role in ("X", "y"):
        assert TRIAL_ALIASES[role][: len(ALIASES[role])] == ALIASES[role]


@pytest.mark.parametrize(
    "names",
    [("X", "y", "domains"), ("trials", "labels", "session"), ("epochs", "events", "subject"),
     ("data", "targets", "runs")],
)  # fmt: skip
def test_aliases_are_read(tmp_path, names):
    X, y, s = _arrays()
    np.savez(tmp_path / "t.npz", **dict(zip(names, (X, y, s), strict=True)))
    data = read_trial_file(tmp_path / "t.npz")
    np.testing.assert_array_equal(data.X, X)
    np.testing.assert_array_equal(data.y, y)
    np.testing.assert_array_equal(data.domains, s)
    assert data.names == dict(zip(("X", "y", "domains"), names, strict=True))
    assert data.X_test is None and data.domains_test is None


def test_a_test_part_under_aliases(tmp_path):
    X, y, s = _arrays()
    Xt, yt, st = _arrays(n=4, seed=1)
    np.savez(tmp_path / "t.npz", trials=X, labels=y, trials_test=Xt, labels_test=yt,
             session=s, session_test=st)  # fmt: skip
    data = read_trial_file(tmp_path / "t.npz")
    np.testing.assert_array_equal(data.X_test, Xt)
    np.testing.assert_array_equal(data.domains_test, st)


@pytest.mark.parametrize(
    "arrays, message",
    [
        ({"trials": np.zeros((4, 2, 8))}, r"missing array\(s\) \['y'\] \(names tried, y: y, lab"),
        ({"trials": np.ones((4, 2, 8)), "labels": np.arange(3)}, "y must hold one label"),
        ({"X": np.ones((4, 2, 8)), "y": np.arange(4), "session": np.arange(3)}, "domains must"),
        ({"X": np.ones((4, 2, 8)), "y": np.arange(4), "trials_test": np.ones((2, 2, 8))},
         "together"),
    ],
)  # fmt: skip
def test_bad_files_name_the_problem(tmp_path, arrays, message):
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ValueError, match=message):
        read_trial_file(tmp_path / "bad.npz")


@pytest.mark.filterwarnings("ignore::rankmetric.training.UntrainedModelWarning")  # 3 steps
def test_the_command_line_reads_aliases_and_sessions(tmp_path, capsys):
    import json

    X, y, s = _arrays(n=24, c=3, t=64)
    path = tmp_path / "mine.npz"
    np.savez(path, trials=X, labels=y, session=s)
    argv = ["fit", "rpl", "--data", str(path), "--test-domain", "s2", "--max-iter", "3",
            "--validation-every", "3", "--random-state", "0", "--device", "cpu",
            "--json"]  # fmt: skip
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["split"].startswith("domain s2 held out") and report["n_test"] == 12


def _spd_stack(n=60, c=5, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(3), n // 3)
    A = rng.normal(size=(n, c, 3 * c))
    A[:, :, :2] += y[:, None, None]
    return A @ A.transpose(0, 2, 1) / (3 * c), y


def test_a_file_of_spd_matrices_is_used_as_given(tmp_path):
    """Covariances the user estimated: read as SPD matrices, never re-estimated from them as if
    they were raw trials; a covariance estimator for them is refused, naming it."""
    from rankmetric.datasets import load_split

    C, y = _spd_stack()
    np.savez(tmp_path / "covs.npz", X=C, y=y)
    data = read_trial_file(tmp_path / "covs.npz")
    X, labels, _ = _arrays()
    np.savez(tmp_path / "trials.npz", X=X, y=labels)
    assert data.holds_spd and not read_trial_file(tmp_path / "trials.npz").holds_spd
    split = load_split(tmp_path / "covs.npz", test_size=0.3, spd=True)
    rows = {m.tobytes() for m in C}
    assert all(m.tobytes() in rows for m in np.concatenate([split.X_train, split.X_test]))
    assert split.how.endswith("the file's SPD matrices, as given")
    with pytest.raises(ValueError, match="covariance_estimator: .* holds SPD matrices"):
        load_split(tmp_path / "covs.npz", spd=True, covariance_estimator="lwf")


def test_a_non_spd_matrix_in_a_file_of_matrices_is_named(tmp_path):
    C, y = _spd_stack()
    C[7] = -np.eye(C.shape[1])  # symmetric, not positive definite
    np.savez(tmp_path / "bad.npz", covariances=C, labels=y)
    with pytest.raises(ValueError, match=r"bad.npz: covariances\[7\] is not positive definite"):
        read_trial_file(tmp_path / "bad.npz")


@pytest.mark.filterwarnings("ignore::rankmetric.training.UntrainedModelWarning")
def test_the_command_line_fits_on_a_file_of_spd_matrices(tmp_path, capsys):
    C, y = _spd_stack()
    np.savez(tmp_path / "covs.npz", X=C, y=y)
    argv = ["fit", "rpl", "--data", str(tmp_path / "covs.npz"), "--max-iter", "5", "--json"]
    assert main([*argv, "--random-state", "0"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["split"].endswith("the file's SPD matrices, as given")
