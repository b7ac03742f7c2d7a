"""A failed (re)fit leaves the estimator unfitted; stale or damaged checkpoints are refused.

Issue #15, findings 3, 14 (checkpoints) and 15.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

import rankmetric.training as training
import rankmetric.training._checkpoints as _checkpoints

# Fits here use deliberately tiny budgets and data: the convergence and untrained-model
# warnings they raise are expected (the tests that check a warning use pytest.warns).
pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
]


def _fitted(spec):
    X, y = spec.data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return spec.make().fit(X, y), X, y


@pytest.mark.parametrize("case", ["one class, fewer features", "NaN label"])
def test_a_failed_refit_leaves_the_estimator_unfitted(spec, case):
    est, X, y = _fitted(spec)
    if case == "NaN label":
        bad_X, bad_y = X, np.where(np.arange(len(y)) == 3, np.nan, y.astype(float))
    else:  # validation sets n_features_in_ before the labels are refused
        bad_X, bad_y = (X[:, :4] if X.ndim == 2 else X[:, :3, :3]), np.zeros(len(y))
    with pytest.raises(ValueError):
        est.fit(bad_X, bad_y)
    with pytest.raises(NotFittedError):
        check_is_fitted(est)
    assert not [k for k in vars(est) if k.endswith("_") and not k.startswith("__")]
    assert est.get_params() == spec.make().get_params()  # hyper-parameters untouched


def test_a_refit_interrupted_mid_training_leaves_the_estimator_unfitted(torch_spec, monkeypatch):
    est, X, y = _fitted(torch_spec)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(training._loop.torch.optim.Optimizer, "zero_grad", interrupted)
    with pytest.raises(KeyboardInterrupt):
        est.fit(X, y)
    with pytest.raises(NotFittedError):
        est.transform(X)


def test_multi_metric_lmnn_failed_refit_leaves_it_unfitted():
    from rankmetric import MultiMetricLMNN

    from .conftest import estimators

    X, y = estimators.make_data("features")
    est = MultiMetricLMNN(max_iter=5).fit(X, y)
    with pytest.raises(ValueError):
        est.fit(X[:, :4], np.zeros(len(y)))
    with pytest.raises(NotFittedError):
        est.predict(X)


def test_a_failed_fit_keeps_set_output_configuration(spec):
    est = spec.make()
    if not hasattr(est, "set_output"):
        pytest.skip("no set_output")
    est.set_output(transform="default")
    config = dict(getattr(est, "_sklearn_output_config", {}))
    X, y = spec.data()
    with pytest.raises(ValueError):
        est.fit(X, np.zeros(len(y)))
    assert getattr(est, "_sklearn_output_config", {}) == config


# ----------------------------------------------------------------------------- checkpoints


class _Killed(Exception):
    pass


def _leave_a_checkpoint(spec, monkeypatch, checkpoint_dir, X, y, **params):
    """Fit until the first checkpoint is written, then die: the checkpoint stays behind."""
    save = _checkpoints.save_checkpoint

    def save_then_die(*args, **kwargs):
        save(*args, **kwargs)
        raise _Killed

    monkeypatch.setattr(_checkpoints, "save_checkpoint", save_then_die)
    est = spec.make(checkpoint_dir=checkpoint_dir, checkpoint_every=5, **params)
    with pytest.raises(_Killed):
        est.fit(X, y)
    monkeypatch.setattr(_checkpoints, "save_checkpoint", save)
    assert (checkpoint_dir / "checkpoint.pt").exists()


def _other_hyper_parameter(spec) -> dict:
    name, values = next(iter(spec.grid.items()))
    current = spec.make().get_params()[name]
    return {name: next(v for v in values if v != current)}


@pytest.mark.parametrize("change", ["data", "labels", "hyper-parameter"])
def test_a_stale_checkpoint_is_refused(torch_spec, monkeypatch, tmp_path, change):
    X, y = torch_spec.data()
    _leave_a_checkpoint(torch_spec, monkeypatch, tmp_path, X, y)
    params = {}
    if change == "data":  # same shape, other values
        X = torch_spec.data(seed=1)[0]
    elif change == "labels":
        y = np.roll(y, 1)
    else:
        params = _other_hyper_parameter(torch_spec)
    est = torch_spec.make(checkpoint_dir=tmp_path, checkpoint_every=5, **params)
    with pytest.raises(ValueError, match="checkpoint.*does not match the model being trained"):
        est.fit(X, y)


def test_the_same_fit_resumes_its_checkpoint(torch_spec, monkeypatch, tmp_path):
    X, y = torch_spec.data()
    _leave_a_checkpoint(torch_spec, monkeypatch, tmp_path, X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = torch_spec.make(checkpoint_dir=tmp_path, checkpoint_every=5, verbose=False)
        est.fit(X, y)
    assert not (tmp_path / "checkpoint.pt").exists()  # resumed and finished


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty", "a pickle"])
def test_a_damaged_checkpoint_gives_our_own_error(monkeypatch, tmp_path, damage):
    from .conftest import estimators

    spec = estimators.BY_NAME["WARCA"]
    X, y = spec.data()
    _leave_a_checkpoint(spec, monkeypatch, tmp_path, X, y)
    path = tmp_path / "checkpoint.pt"
    data = path.read_bytes()
    path.write_bytes(
        {
            "garbage": b"\x00garbage" * 100,
            "truncated": data[: len(data) // 2],
            "empty": b"",
            "a pickle": __import__("pickle").dumps({"step": 3, "x": object()}),
        }[damage]
    )
    with pytest.raises(ValueError, match="is damaged or not a rankmetric checkpoint") as info:
        spec.make(checkpoint_dir=tmp_path, checkpoint_every=5).fit(X, y)
    assert "weights_only" not in str(info.value)


def test_checkpoints_are_written_atomically_under_unique_names(tmp_path, monkeypatch):
    import torch

    module = torch.nn.Linear(2, 1)
    names = []
    real = _checkpoints.atomic_write

    def spy(path, write):
        names.append(path)
        real(path, write)

    def killed_at_4(step):
        if step == 4:
            raise _Killed
        return module.weight.square().sum()

    monkeypatch.setattr(_checkpoints, "atomic_write", spy)
    with pytest.raises(_Killed):
        training.train(
            module,
            torch.optim.SGD(module.parameters(), lr=0.01),
            killed_at_4,
            rng=np.random.default_rng(0),
            max_iter=6,
            checkpointing=training.Checkpointing(tmp_path, every=2),
        )
    assert names and all(p.name == "checkpoint.pt" for p in names)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.pt"]
