"""The shared numpydoc blocks: filled into every estimator, no placeholder left."""

import inspect
import re

import pytest

import rankmetric
from rankmetric.estimators._docstrings import SHARED, fill_doc

_FILLED = ["WARCA", "KernelWARCA", "ITML", "KISSME", "XQDA", "SSNE", "LMNN", "SPDNetEmbedding"]


@pytest.mark.parametrize(
    "name", [*_FILLED, "MultiMetricLMNN", "PairClassifier", "RPLEmbedding", "MDM"]
)
def test_no_placeholder_left(name):
    cls = getattr(rankmetric, name)
    docs = [cls.__doc__] + [m.__doc__ or "" for _, m in inspect.getmembers(cls, callable)]
    assert not any(re.search(r"%\(\w+\)s", doc) for doc in docs)


@pytest.mark.parametrize("name", _FILLED)
def test_shared_attribute_text_is_rendered(name):
    doc = getattr(rankmetric, name).__doc__
    assert "held_out_check_ : dict or None" in doc
    assert '    fallback : {None, "reference"}, default=None\n' in doc


def test_blocks_take_the_placeholder_indentation():
    @fill_doc
    def f():
        """Head.

        Parameters
        ----------
        %(checkpoint)s
        """

    lines = f.__doc__.splitlines()
    assert lines[4] == "        checkpoint_dir : str or path-like, optional"
    assert lines[-2] == "            Steps between two checkpoints."
    assert len(lines) == 4 + len(SHARED["checkpoint"].splitlines()) + 1


def test_unknown_block_raises():
    def f():
        """Head.

        %(no_such_block)s
        """

    with pytest.raises(KeyError, match="no_such_block"):
        fill_doc(f)


def test_inline_percent_and_braces_untouched():
    @fill_doc
    def f():
        """50 % of {a} and %(held_out_check)s inline stay."""

    assert f.__doc__ == """50 % of {a} and %(held_out_check)s inline stay."""


@pytest.mark.parametrize(
    ("name", "method", "text"),
    [
        ("MDM", "fit", "    y : array-like of shape (n_matrices,)\n            Class labels."),
        ("MDM", "predict_proba", "            Columns in the order of ``classes_``."),
        ("MDM", "predict", "            SPD matrices.\n\n        Returns"),
        ("SPDNetEmbedding", "fit", "X : array-like of shape (n_matrices, c, c)\n            SPD"),
        ("PairClassifier", "predict", "        Parameters\n        ----------\n        pairs :"),
    ],
)
def test_shared_method_blocks_are_rendered(name, method, text):
    assert text in getattr(getattr(rankmetric, name), method).__doc__


def test_warca_reference_is_rendered():
    assert "    .. [1] C. Jose and F. Fleuret. Scalable Metric" in rankmetric.WARCA.__doc__
