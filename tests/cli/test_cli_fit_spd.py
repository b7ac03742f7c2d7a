"""``rankmetric fit rpl|spdnet``: raw trial files, the covariance estimator, help without markup."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from rankmetric.cli import main
from rankmetric.cli._help import _first_sentence, _numpydoc_parameters, _plain
from rankmetric.cli.fit import METHODS
from rankmetric.preprocessing import Covariances

# Fits here use deliberately tiny budgets and data: the convergence and untrained-model
# warnings they raise are expected (the tests that check a warning use pytest.warns).
pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning"),
]
FAST = ["--max-iter", "3", "--validation-every", "3", "--random-state", "0", "--device", "cpu"]


def _trials(n=24, channels=4, time=64, seed=0):
    """Two classes of raw trials that differ in their channel mixing."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.array(["left", "right"]), n // 2)
    mixing = np.stack([np.eye(channels), np.eye(channels) + rng.normal(size=(channels,) * 2)])
    X = mixing[(y == "right").astype(int)] @ rng.normal(size=(n, channels, time))
    return X, y


@pytest.fixture
def trial_file(tmp_path):
    X, y = _trials()
    path = tmp_path / "trials.npz"
    np.savez(path, X=X, y=y)
    return path


def _run_json(argv, capsys):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("method", ["rpl", "spdnet"])
def test_fit_on_a_trial_file_with_a_covariance_estimator(trial_file, method, capsys, tmp_path):
    report = _run_json(
        ["fit", method, "--data", str(trial_file), "--covariance-estimator", "scm", "--json",
         "--out", str(tmp_path / "m.npz"), *FAST],
        capsys,
    )  # fmt: skip
    assert report["n_train"] + report["n_test"] == 24  # --test-size 0.3 held out, stratified
    assert report["split"].startswith("stratified 30%")
    assert 0.0 <= report["knn3_accuracy_learned"] <= 1.0
    from rankmetric import load_model

    assert load_model(tmp_path / "m.npz").n_features_in_ == 4  # 4 channels → 4 × 4 matrices


def test_the_estimator_reaches_covariances(trial_file, capsys, tmp_path, monkeypatch):
    """The matrices the network sees are Covariances(estimator=NAME)'s, for each name."""
    import rankmetric.datasets.splits as splits_module

    seen = {}
    original = splits_module._covariances

    def spy(name):
        cov = original(name)
        return lambda X: seen.setdefault(name, cov(X))

    monkeypatch.setattr(splits_module, "_covariances", spy)
    X, y = np.load(trial_file)["X"], np.load(trial_file)["y"]
    for name in ("scm", "oas"):
        _run_json(["fit", "spdnet", "--data", str(trial_file), "--covariance-estimator", name,
                   "--json", *FAST], capsys)  # fmt: skip
        np.testing.assert_allclose(seen[name], Covariances(estimator=name).fit_transform(X))
    assert not np.allclose(seen["scm"], seen["oas"])
    assert len(seen["scm"]) == len(y)


def test_a_trial_file_with_its_own_test_part(tmp_path, capsys):
    X, y = _trials(seed=1)
    X_test, y_test = _trials(n=10, seed=2)
    path = tmp_path / "split.npz"
    np.savez(path, X=X, y=y, X_test=X_test, y_test=y_test)
    report = _run_json(["fit", "rpl", "--data", str(path), "--json", *FAST], capsys)
    assert report["split"] == "official test split"
    assert (report["n_train"], report["n_test"]) == (24, 10)


@pytest.mark.data
def test_a_named_set_with_another_covariance_estimator(capsys):
    report = _run_json(
        ["fit", "rpl", "--data", "BasicMotions", "--covariance-estimator", "scm", "--json", *FAST],
        capsys,
    )
    assert (report["n_train"], report["n_test"]) == (40, 40)


def _error(argv, capsys) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


@pytest.mark.parametrize(
    "arrays, message",
    [
        ({"X": np.zeros((4, 2, 8))}, r"missing array\(s\) \['y'\]"),
        ({"X": np.zeros((4, 8)), "y": np.arange(4)}, r"X must have shape \(n_trials"),
        ({"X": np.ones((4, 2, 8)), "y": np.arange(3)}, "one label per trial"),
        ({"X": np.full((4, 2, 8), np.nan), "y": np.arange(4)}, "finite"),
        ({"X": np.ones((4, 2, 8)), "y": np.arange(4), "X_test": np.ones((2, 2, 8))}, "together"),
    ],
)
def test_bad_trial_files_are_named(tmp_path, capsys, arrays, message):
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    err = _error(["fit", "rpl", "--data", str(path), *FAST], capsys)
    assert "--data" in err and re.search(message, err), err


def test_missing_trial_file_and_unknown_estimator_are_named(trial_file, tmp_path, capsys):
    err = _error(["fit", "rpl", "--data", str(tmp_path / "nosuch.npz"), *FAST], capsys)
    assert "--data" in err and "no such file" in err
    err = _error(["fit", "rpl", "--data", str(trial_file), "--covariance-estimator", "nosuch",
                  *FAST], capsys)  # fmt: skip
    assert "--covariance-estimator" in err and "nosuch" in err


def test_covariance_estimator_on_a_derived_set_is_refused(capsys):
    err = _error(["fit", "rpl", "--data", "fmnist-regcov", "--covariance-estimator", "scm",
                  *FAST], capsys)  # fmt: skip
    assert "--covariance-estimator" in err and "fmnist-regcov" in err


# ----------------------------------------------------------------------------- help text

_MARKUP = re.compile(r":\w+:`|``|`|\\[A-Za-z]+")  # roles, literals, LaTeX macros


@pytest.mark.parametrize("method", list(METHODS))
def test_every_option_has_help_without_sphinx_markup(method, capsys):
    with pytest.raises(SystemExit):
        main(["fit", method, "--help"])
    text = capsys.readouterr().out
    options = re.findall(r"^  (--[\w-]+)(?: (?:VALUE|NAME|PATH|[A-Z_]+))?(.*)$", text, re.M)
    assert options
    lines = text.splitlines()
    for i, line in enumerate(lines):
        match = re.match(r"^  (--[\w-]+)(?: [A-Z_]+)?\s*$", line)
        if match:  # the help starts on the next line, which must not be another option
            follow = lines[i + 1] if i + 1 < len(lines) else ""
            assert follow.strip() and not follow.strip().startswith("-"), match.group(1)
    assert not _MARKUP.search(text.split("options:", 1)[1].replace("`rankmetric data list`", ""))
    with pytest.raises(SystemExit):
        main(["fit", "--help"])  # the methods' summaries too
    assert not _MARKUP.search(capsys.readouterr().out.split("positional arguments:", 1)[1])
    if METHODS[method].fit_input == "spd":
        assert "--covariance-estimator" in text and ".npz file of raw trials" in text


def test_help_parser_reads_grouped_and_continued_names():
    class Doc:
        """Summary.

        Parameters
        ----------
        a, b : float, default=1
            Shared text. Second sentence.
        c, d,
        e :
            As :class:`~pkg.Base` (Brooks et al. 2019, see :func:`f`).
        mode : {"x", "y"}
        """

    params = _numpydoc_parameters(Doc)
    assert set(params) == {"a", "b", "c", "d", "e", "mode"}
    assert params["a"] == ("float, default=1", "Shared text. Second sentence.")
    assert params["mode"] == ('{"x", "y"}', "")
    assert _plain(params["e"][1]) == "As Base (Brooks et al. 2019, see f)."
    assert _first_sentence("A (b. C) d. E.") == "A (b. C) d"
    assert _first_sentence("Brooks et al. 2019 say so. Then.") == "Brooks et al. 2019 say so"


def _session_file(tmp_path):
    """Two sessions of the same two classes, the second seen through another channel mixing."""
    X, y = _trials(n=32)
    sessions = np.repeat(np.array(["s1", "s2"]), 16)[np.r_[0:8, 16:24, 8:16, 24:32]]
    X = X.copy()
    shift = np.eye(4) + 0.8 * np.random.default_rng(5).normal(size=(4, 4))
    X[sessions == "s2"] = shift @ X[sessions == "s2"]
    path = tmp_path / "sessions.npz"
    np.savez(path, X=X, y=y, domains=sessions)
    return path, sessions


def test_test_domain_holds_a_session_out_and_fits_with_the_domains(tmp_path, capsys, monkeypatch):
    from rankmetric.estimators.spd import RPLEmbedding

    path, sessions = _session_file(tmp_path)
    seen = {}
    original_fit = RPLEmbedding.fit

    def spy(self, X, y, domains=None):
        seen["domains"] = domains
        return original_fit(self, X, y, domains=domains)

    monkeypatch.setattr(RPLEmbedding, "fit", spy)
    argv = ["fit", "rpl", "--data", str(path), "--test-domain", "s2", "--json", *FAST]
    report = _run_json(argv, capsys)
    assert report["split"].startswith("domain s2 held out")
    assert report["n_train"] == report["n_test"] == 16
    assert set(seen["domains"]) == {"s1"}  # trained on the other session only


def test_domains_keep_the_stratified_split_and_reach_fit(tmp_path, capsys):
    path, _ = _session_file(tmp_path)
    with_domains = _run_json(["fit", "spdnet", "--data", str(path), "--json", *FAST], capsys)
    data = dict(np.load(path))
    data.pop("domains")
    np.savez(tmp_path / "plain.npz", **data)
    plain = _run_json(["fit", "spdnet", "--data", str(tmp_path / "plain.npz"), "--json", *FAST],
                      capsys)  # fmt: skip
    assert with_domains["split"] == plain["split"] and with_domains["n_test"] == plain["n_test"]


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--test-domain", "s9"], r"--test-domain 's9' must be one of \['s1', 's2'\]"),
        (["--test-domain", "s1", "--data-without-domains"], "needs a trial file with domains"),
    ],
)
def test_test_domain_errors_name_the_problem(tmp_path, capsys, extra, message):
    path, _ = _session_file(tmp_path)
    if "--data-without-domains" in extra:
        extra = extra[:2]
        data = dict(np.load(path))
        data.pop("domains")
        np.savez(path, **data)
    assert main(["fit", "rpl", "--data", str(path), *extra, *FAST]) == 2
    assert re.search(message, capsys.readouterr().err)


def test_domains_of_the_wrong_length_are_refused(tmp_path, capsys):
    path, _ = _session_file(tmp_path)
    data = dict(np.load(path))
    np.savez(path, **{**data, "domains": data["domains"][:5]})
    assert main(["fit", "rpl", "--data", str(path), *FAST]) == 2
    assert "domains must hold one domain per trial of X (32)" in capsys.readouterr().err


@pytest.mark.parametrize("extra", [[], ["--test-domain", "s2"]])
def test_evaluate_an_spd_model_on_its_trial_file(tmp_path, capsys, extra):
    """``evaluate --model`` on raw trials: the same covariances, split and domains as ``fit``."""
    path, _ = _session_file(tmp_path)
    model = tmp_path / "rpl.npz"
    common = ["--data", str(path), "--covariance-estimator", "oas", *extra]
    fitted = _run_json(["fit", "rpl", *common, "--out", str(model), "--json", *FAST], capsys)
    argv = ["evaluate", "--model", str(model), *common, "--scores", "knn", "--json"]
    report = _run_json(argv, capsys)
    assert report["split"] == fitted["split"] and report["n_evaluated"] == fitted["n_test"]
    assert report["scores"]["knn3_accuracy"] == pytest.approx(fitted["knn3_accuracy_learned"])


def test_evaluate_refuses_raw_trials_with_a_vector_model(tmp_path, capsys):
    path, _ = _session_file(tmp_path)
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "f.npz", X=rng.normal(size=(30, 4)), y=np.arange(30) % 3)
    assert main(["fit", "kissme", "--data", str(tmp_path / "f.npz"), "--out",
                 str(tmp_path / "k.npz")]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["evaluate", "--model", str(tmp_path / "k.npz"), "--data", str(path)]) == 2
    assert "must be an SPD network" in capsys.readouterr().err
