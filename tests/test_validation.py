"""The declarative hyper-parameter checks of ``rankmetric._validation``."""

from __future__ import annotations

import inspect
import warnings
from numbers import Integral, Real

import numpy as np
import pytest

from rankmetric._validation import (
    BOOLEAN,
    DEPRECATED,
    NONE,
    POSITIVE_INT,
    RANDOM_STATE,
    Interval,
    Options,
    ParameterValidationMixin,
    check_param,
    deprecate_positional_args,
    describe,
)


@pytest.mark.parametrize(
    ("interval", "inside", "outside"),
    [
        (Interval(Integral, 1, None, closed="left"), [1, 7, np.int64(3)], [0, -1, 1.0, True, None]),
        (Interval(Real, 0, 1, closed="both"), [0, 0.5, 1, np.float32(0.2)], [-0.1, 1.1, np.nan]),
        (Interval(Real, 0, None, closed="neither"), [1e-9, 5], [0, 0.0, np.inf, False, "1"]),
        (Interval(Real, 0, np.inf, closed="right"), [0.5, np.inf], [0, -np.inf, np.nan]),
        (Interval(Real, -1, 1, closed="left"), [-1, 0.999], [1, 1.0, -1.5]),
        (Interval(Real, None, None, closed="neither"), [-1e300, 0, 3], [np.inf, -np.inf, np.nan]),
    ],
)
def test_interval_admits_exactly_its_numbers(interval, inside, outside):
    """Brute force over a few values on each side of every bound, NaN, inf and bools."""
    assert all(interval.is_satisfied_by(v) for v in inside)
    assert not any(interval.is_satisfied_by(v) for v in outside)


def test_options_match_value_and_type():
    solver = Options("lbfgs", "gd")
    assert solver.is_satisfied_by("gd")
    assert not solver.is_satisfied_by("sgd")
    assert not solver.is_satisfied_by(np.array(["gd"]))  # no elementwise comparison
    assert solver.is_satisfied_by(np.str_("lbfgs"))
    assert not Options(1, 2).is_satisfied_by(True)  # True == 1, but it is not an option


@pytest.mark.parametrize(
    ("constraints", "words"),
    [
        ([POSITIVE_INT], "an integer >= 1"),
        ([NONE, POSITIVE_INT], "None or an integer >= 1"),
        ([Interval(Real, 0, 1, closed="both")], "a number in [0, 1]"),
        ([Interval(Real, 0, None, closed="neither")], "a finite number > 0"),
        ([Interval(Real, None, None, closed="neither")], "a finite number"),
        ([Interval(Real, 0, np.inf, closed="right")], "a number in (0, inf]"),
        ([Options("lbfgs", "gd")], "'lbfgs' or 'gd'"),
        ([Options("pca", "identity", "random"), BOOLEAN], "'pca', 'identity', 'random' or a bool"),
        (
            [Interval(Integral, 1, 4, closed="both", right_label="n_features")],
            "an integer in [1, n_features=4]",
        ),
    ],
)
def test_messages_are_generated_from_the_declaration(constraints, words):
    assert describe(constraints) == words
    with pytest.raises(ValueError, match=r"^max_iter must be .* got 'x'\.$") as info:
        check_param("max_iter", "x", constraints)
    assert words in str(info.value)


def test_random_state_accepts_what_make_rng_accepts():
    for ok in (None, 0, 2**40, np.random.default_rng(0), np.random.RandomState(0)):
        assert RANDOM_STATE.is_satisfied_by(ok)
    for bad in (-1, 1.5, "0", True):
        assert not RANDOM_STATE.is_satisfied_by(bad)


class _Toy(ParameterValidationMixin):
    _parameter_constraints = {"n_neighbors": [POSITIVE_INT], "mode": [Options("a", "b")]}
    _renamed_parameters = {"k": "n_neighbors"}

    @deprecate_positional_args
    def __init__(self, *, n_neighbors=3, mode="a", k=DEPRECATED):
        self.n_neighbors, self.mode, self.k = n_neighbors, mode, k

    def get_params(self, deep=False):
        return {"n_neighbors": self.n_neighbors, "mode": self.mode, "k": self.k}


def test_a_renamed_parameter_warns_names_the_new_one_and_wins():
    toy = _Toy(k=5)
    with pytest.warns(FutureWarning, match="'k' was renamed 'n_neighbors'"):
        toy._validate_params()
    assert toy._param("n_neighbors") == 5
    assert _Toy(n_neighbors=4)._param("n_neighbors") == 4


def test_a_renamed_parameter_is_checked_under_its_old_name():
    with pytest.warns(FutureWarning), pytest.raises(ValueError, match="^k must be an integer"):
        _Toy(k=0)._validate_params()


def test_the_first_broken_declaration_is_named():
    with pytest.raises(ValueError, match=r"^mode must be 'a' or 'b', got 'c'\.$"):
        _Toy(mode="c")._validate_params()


def test_positional_arguments_warn_and_keep_working():
    with pytest.warns(FutureWarning, match="pass n_neighbors=7 as keywords"):
        toy = _Toy(7)
    assert toy.n_neighbors == 7
    with pytest.raises(TypeError, match="multiple values"), warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        _Toy(7, n_neighbors=2)
    with pytest.raises(TypeError, match="keyword arguments only"):
        _Toy(1, "a", 2, 3)


def test_the_wrapped_init_keeps_its_keyword_only_signature():
    """scikit-learn's get_params reads this signature (no *args allowed)."""
    params = inspect.signature(_Toy.__init__).parameters
    assert [p.kind for p in params.values()][1:] == [inspect.Parameter.KEYWORD_ONLY] * 3


# ------------------------------------------------ the split: checks / constraints / deprecation


def test_old_import_paths_keep_every_name():
    import rankmetric._validation as v
    from rankmetric._validation import checks, compat, constraints

    for module in (checks, constraints, compat):
        for name in module.__all__:
            assert getattr(v, name) is getattr(module, name), name


def test_one_label_encoder_shares_codes_across_arrays():
    from rankmetric._validation import check_labels, encode_labels

    classes, (a, b) = encode_labels(np.array([3, 1, 3]), np.array([2, 1]))
    assert classes.tolist() == [1, 2, 3]
    assert a.tolist() == [2, 0, 2] and b.tolist() == [1, 0]
    assert a.dtype == np.int64
    assert check_labels(np.array([3, 1, 3]))[1].tolist() == [1, 0, 1]
    with pytest.raises(ValueError, match="at least one label array"):
        encode_labels()


@pytest.mark.parametrize("as_tensor", [False, True])
def test_one_spd_check_for_numpy_and_torch(as_tensor):
    import torch

    from rankmetric.geometry import check_spd as check_spd_array

    def wrap(X):
        return torch.from_numpy(X) if as_tensor else X

    good = np.stack([np.eye(3), 2 * np.eye(3)])
    assert check_spd_array(wrap(good)) is not None
    asym = good.copy()
    asym[1, 0, 2] = 1.0
    with pytest.raises(ValueError, match=r"X\[1\] is not symmetric"):
        check_spd_array(wrap(asym))
    indefinite = good.copy()
    indefinite[0, 0, 0] = -1.0
    with pytest.raises(ValueError, match=r"X\[0\] is not positive definite"):
        check_spd_array(wrap(indefinite))
    with pytest.raises(ValueError, match="NaN or infinity"):
        check_spd_array(wrap(np.full((1, 2, 2), np.nan)))


def test_one_deprecation_helper_with_one_removal_version():
    from rankmetric._validation import (
        REMOVAL_VERSION,
        deprecated_alias,
        renamed_keywords,
        warn_deprecated,
    )

    assert REMOVAL_VERSION == "0.3"
    with pytest.warns(FutureWarning, match=r"^f\(k\) will stop working in 0\.3\. Use g\.$"):
        warn_deprecated("f(k)", "Use g")

    @renamed_keywords(distance="metric")
    def score(*, metric="euclidean"):
        return metric

    with pytest.warns(FutureWarning, match="'distance' was renamed 'metric'.*0.3"):
        assert score(distance="cosine") == "cosine"
    with pytest.raises(TypeError, match="both"):
        score(distance="cosine", metric="cosine")

    def optimize(x):
        return x + 1

    with pytest.warns(FutureWarning, match="optimise was renamed optimize.*0.3"):
        assert deprecated_alias(optimize, "optimise")(1) == 2


def test_british_names_before_0_2_still_work_with_a_warning():
    from rankmetric.datasets._registry import normalise_name, normalize_name
    from rankmetric.estimators.lmnn import optimise_with_progress, optimize_with_progress

    with pytest.warns(FutureWarning, match="normalise_name was renamed normalize_name"):
        assert normalise_name("Iris") == normalize_name("Iris")
    assert optimise_with_progress.__wrapped__ is optimize_with_progress
