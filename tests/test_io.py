import numpy as np
import pytest
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import validate_data

from rankmetric.estimators.base import MahalanobisMixin
from rankmetric.io import load_model, register_estimator, save_model

# Fits here use deliberately tiny budgets and data: the convergence and untrained-model
# warnings they raise are expected (the tests that check a warning use pytest.warns).
pytestmark = [pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")]


@register_estimator
class _ScaledIdentity(MahalanobisMixin, TransformerMixin, BaseEstimator):
    def __init__(self, scale=2.0, name="x"):
        self.scale = scale
        self.name = name

    def fit(self, X, y=None):
        X = validate_data(self, X)
        self.components_ = self.scale * np.eye(X.shape[1])
        self.history_ = [{"step": 1, "loss": 0.5}]
        self.blocks_ = [np.ones(2), np.zeros((2, 2))]
        self.n_iter_ = 3
        return self


@pytest.fixture
def fitted(rng):
    X = rng.normal(size=(20, 4))
    return _ScaledIdentity(scale=3.0).fit(X), X


def test_round_trip_gives_identical_transform(tmp_path, fitted):
    est, X = fitted
    est.save(tmp_path / "m.npz")
    loaded = _ScaledIdentity.load(tmp_path / "m.npz")
    np.testing.assert_array_equal(loaded.transform(X), est.transform(X))
    assert loaded.get_params() == est.get_params()
    assert loaded.history_ == est.history_ and loaded.n_iter_ == 3
    np.testing.assert_array_equal(loaded.blocks_[1], est.blocks_[1])
    np.testing.assert_allclose(loaded.get_mahalanobis_matrix(), 9 * np.eye(4))


def test_truncated_file_is_rejected(tmp_path, fitted):
    path = tmp_path / "m.npz"
    save_model(fitted[0], path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="not a readable rankmetric model file"):
        load_model(path)


def test_tampered_array_is_rejected(tmp_path, fitted):
    path = tmp_path / "m.npz"
    save_model(fitted[0], path)
    with np.load(path, allow_pickle=False) as archive:
        arrays = {k: archive[k] for k in archive.files}
    arrays["attr/components_"] = arrays["attr/components_"] * 2
    np.savez(path, **arrays)
    with pytest.raises(ValueError, match="fails its checksum"):
        load_model(path)


def test_pickle_payload_is_never_executed(tmp_path):
    path = tmp_path / "evil.npz"
    np.savez(path, __meta__=np.array([{"format": "rankmetric-model"}], dtype=object))
    with pytest.raises(ValueError):
        load_model(path)


def test_unfitted_and_unregistered_are_refused(tmp_path):
    with pytest.raises(ValueError, match="not fitted"):
        save_model(_ScaledIdentity(), tmp_path / "m.npz")

    class Other(_ScaledIdentity):
        pass

    est = Other().fit(np.ones((3, 2)))
    with pytest.raises(ValueError, match="not a registered"):
        save_model(est, tmp_path / "m.npz")


def test_load_checks_the_class(tmp_path, fitted):
    from sklearn.base import BaseEstimator

    path = tmp_path / "m.npz"
    save_model(fitted[0], path)

    @register_estimator
    class _Unrelated(MahalanobisMixin, BaseEstimator):
        pass

    with pytest.raises(ValueError, match="not a _Unrelated"):
        _Unrelated.load(path)


def test_get_metric_and_pair_distances(fitted, rng):
    est, X = fitted
    metric = est.get_metric()
    assert metric(X[0], X[1]) == pytest.approx(3 * np.linalg.norm(X[0] - X[1]))
    np.testing.assert_allclose(
        est.pair_distances(X[:5], X[5:10]), 3 * np.linalg.norm(X[:5] - X[5:10], axis=1)
    )


# ----------------------------------------------------------------------------- atomic saves


def _temporaries(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_a_save_failing_half_way_leaves_the_previous_model_intact(tmp_path, fitted, monkeypatch):
    import rankmetric.io as rio

    est, X = fitted
    path = tmp_path / "m.npz"
    save_model(est, path)
    before = path.read_bytes()

    def disk_full(fh, **arrays):
        fh.write(b"PK\x03\x04 half an archive")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(rio.np, "savez", disk_full)
    with pytest.raises(OSError, match="No space left"):
        save_model(est, path)
    assert path.read_bytes() == before
    assert _temporaries(tmp_path) == []


def test_a_save_killed_half_way_leaves_the_previous_model_intact(tmp_path, fitted):
    import subprocess
    import sys

    est, _ = fitted
    path = tmp_path / "m.npz"
    save_model(est, path)
    before = path.read_bytes()
    child = f"""
import os, signal, sys
import numpy as np
sys.path.insert(0, {str(__import__("pathlib").Path(__file__).parent)!r})
import rankmetric.io as rio
from test_io import _ScaledIdentity

def killed(fh, **arrays):
    fh.write(b"PK half")
    fh.flush()
    os.kill(os.getpid(), signal.SIGKILL)

est = _ScaledIdentity().fit(np.ones((4, 3)))
rio.np.savez = killed
rio.save_model(est, {str(path)!r})
"""
    proc = subprocess.run([sys.executable, "-c", child], capture_output=True, timeout=120)
    assert proc.returncode == -9, proc.stderr.decode()[-2000:]
    assert path.read_bytes() == before


def test_a_reader_never_sees_a_half_written_model(tmp_path, rng):
    import threading

    path = tmp_path / "m.npz"
    models = [_ScaledIdentity(scale=s).fit(rng.normal(size=(5, 60))) for s in (1.0, 2.0)]
    save_model(models[0], path)
    stop, errors = threading.Event(), []

    def writer():
        for i in range(60):
            save_model(models[i % 2], path)
        stop.set()

    thread = threading.Thread(target=writer)
    thread.start()
    loads = 0
    while not stop.is_set() or loads == 0:
        try:
            loaded = load_model(path)
            assert loaded.scale in (1.0, 2.0)
        except ValueError as exc:
            errors.append(str(exc))
        loads += 1
    thread.join()
    assert errors == []
    assert _temporaries(tmp_path) == []


def test_a_saved_file_gets_the_permissions_of_an_ordinary_file(tmp_path, fitted):
    import os

    save_model(fitted[0], tmp_path / "m.npz")
    (tmp_path / "plain").write_bytes(b"")
    mode = os.stat(tmp_path / "m.npz").st_mode & 0o777
    assert mode == os.stat(tmp_path / "plain").st_mode & 0o777


# ----------------------------------------------------------------------------- special parameters


@register_estimator
class _WithArrayParam(_ScaledIdentity):
    def __init__(self, scale=2.0, name="x", prior=None, random_state=None):
        super().__init__(scale=scale, name=name)
        self.prior = prior
        self.random_state = random_state


@pytest.mark.parametrize("bit_generator", ["PCG64", "MT19937", "Philox", "SFC64"])
def test_array_and_generator_parameters_are_saved(tmp_path, rng, bit_generator):
    gen = np.random.Generator(getattr(np.random, bit_generator)(7))
    est = _WithArrayParam(prior=2 * np.eye(3), random_state=gen).fit(rng.normal(size=(5, 3)))
    est.save(tmp_path / "m.npz")
    loaded = load_model(tmp_path / "m.npz")
    np.testing.assert_array_equal(loaded.prior, est.prior)
    assert type(loaded.random_state.bit_generator).__name__ == bit_generator
    assert loaded.random_state.integers(0, 2**62) == gen.integers(0, 2**62)


def test_a_random_state_instance_parameter_is_saved(tmp_path, rng):
    state = np.random.RandomState(3)
    est = _WithArrayParam(random_state=state).fit(rng.normal(size=(5, 3)))
    est.save(tmp_path / "m.npz")
    loaded = load_model(tmp_path / "m.npz")
    assert loaded.random_state.randint(0, 2**31) == state.randint(0, 2**31)


def test_itml_with_an_array_prior_and_a_generator_can_be_saved(tmp_path, rng):
    from rankmetric import ITML

    X, y = rng.normal(size=(30, 3)), np.repeat([0, 1, 2], 10)
    est = ITML(prior=np.diag([1.0, 2.0, 3.0]), random_state=np.random.default_rng(0), max_iter=20)
    est.fit(X, y)
    est.save(tmp_path / "itml.npz")
    loaded = ITML.load(tmp_path / "itml.npz")
    np.testing.assert_array_equal(loaded.prior, est.prior)
    np.testing.assert_array_equal(loaded.transform(X), est.transform(X))


# ----------------------------------------------------------------------------- compatibility

MODEL_FILES = __import__("pathlib").Path(__file__).parent / "data" / "model_files"


@pytest.mark.parametrize("name", ["warca", "kissme"])
def test_files_written_before_the_fitted_array_declarations_still_load(name):
    """Files of format version 1 written by rankmetric at f5d443a (before io knew no names)."""
    expected = np.load(MODEL_FILES / "format1_expected.npz")
    loaded = load_model(MODEL_FILES / f"{name}_format1.npz")
    np.testing.assert_array_equal(loaded.transform(expected["X"]), expected[name])


def test_the_declared_arrays_are_merged_along_the_class_hierarchy():
    from rankmetric import KISSME, WARCA
    from rankmetric.io import _declared_arrays

    assert _declared_arrays(WARCA) == {
        "components_": (None, "n_features_in_"),
        "mean_": ("n_features_in_",),
        "scale_": ("n_features_in_",),
    }
    assert set(_declared_arrays(KISSME)) == {"components_", "mean_", "pca_components_"}


@register_estimator
class _WithDeclaredArray(_ScaledIdentity):
    _fitted_arrays = {"offset_": ("n_features_in_",)}

    def fit(self, X, y=None):
        super().fit(X)
        self.offset_ = np.zeros(X.shape[1])
        return self


def test_a_declared_array_of_the_wrong_shape_is_refused_on_save_and_on_load(
    tmp_path, rng, monkeypatch
):
    import rankmetric.io as rio

    est = _WithDeclaredArray().fit(rng.normal(size=(6, 3)))
    est.save(tmp_path / "ok.npz")
    assert load_model(tmp_path / "ok.npz").offset_.shape == (3,)
    est.offset_ = np.zeros(4)
    with pytest.raises(ValueError, match=r"offset_ has shape \(4,\), not \('n_features_in_',\)"):
        est.save(tmp_path / "bad.npz")
    # a file with a consistent checksum whose declared array has the wrong shape
    check = rio._declared_shape_problem
    monkeypatch.setattr(rio, "_declared_shape_problem", lambda est: None)
    est.save(tmp_path / "bad.npz")
    monkeypatch.setattr(rio, "_declared_shape_problem", check)
    with pytest.raises(ValueError, match="do not fit together.*offset_ has shape"):
        load_model(tmp_path / "bad.npz")


def test_io_names_no_estimator_attribute():
    """The model format is generic: no fitted-attribute name of an estimator in io.py."""
    import inspect
    import re

    import rankmetric.io as rio

    source = inspect.getsource(rio)
    code = re.sub(r'""".*?"""', "", source, flags=re.S)  # docstrings may give examples
    for name in ("mean_", "scale_", "components_", "weights_"):
        assert f'"{name}"' not in code


def test_a_fresh_process_loads_a_model_through_io_alone():
    """``io`` finds the estimator's class from the root's announcement, importing nothing else."""
    import subprocess
    import sys

    path = MODEL_FILES / "warca_format1.npz"
    code = (
        "import sys; from rankmetric.io import load_model; "
        "assert 'rankmetric.estimators.warca' not in sys.modules; "
        f"print(type(load_model({str(path)!r})).__name__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "WARCA"


def test_io_imports_no_estimator_module_itself():
    import ast
    import inspect

    import rankmetric.io as rio

    tree = ast.parse(inspect.getsource(rio))
    imported = [
        node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
    ] + [a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names]
    assert not any("estimators" in m or m == "rankmetric" for m in imported), imported
