"""The two records the loaders hand out: :class:`DatasetInfo` (metadata) and :class:`Dataset`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Dataset", "DatasetInfo", "KINDS"]

KINDS = ("tabular", "image", "multichannel")


# alike: other public names' numpydoc sections (See Also, Examples) in shape; texts differ
@dataclass(frozen=True)
class DatasetInfo:
    """What is known about a data set before loading it.

    Attributes
    ----------
    name : str
        Canonical name, accepted by :func:`~rankmetric.datasets.load_dataset` (matching ignores
        case, ``-``, ``_`` and spaces).
    kind : {"tabular", "image", "multichannel"}
        Images are flattened rows; multichannel trials are arrays (channels, length).
    n_samples : int or None
        Number of samples, training and test part together (None when unknown).
    n_features : int or tuple of (int, int) or None
        Features per sample; ``(n_channels, length)`` for multichannel sets.
    n_classes : int or None
        Number of classes.
    source : str
        Where the copy used here comes from (package and path inside it).
    needs_fetch : bool
        True when ``rankmetric data fetch NAME`` must run before loading.
    available : bool
        False for sets that no package registry ships (``notes`` says why).
    split : bool
        True when the source has an official train/test split (then ``Dataset.X_test`` is set).
    n_test : int
        Size of the official test part (0 without a split).
    description : str
        One line about the data.
    stands_in_for : str
        The paper's data set that this one replaces, if any.
    url : str
        The original source, for a user with internet access.
    notes : str
        Quirks fixed by the loader, or why the set is unavailable.

    See Also
    --------
    rankmetric.datasets.list_datasets : The information of every known set.

    Examples
    --------
    >>> from rankmetric.datasets import list_datasets
    >>> info = list_datasets()[0]
    >>> info.name, info.kind, info.needs_fetch
    ('iris', 'tabular', False)
    """

    name: str
    kind: str
    n_samples: int | None
    n_features: int | tuple[int, int] | None
    n_classes: int | None
    source: str
    needs_fetch: bool
    available: bool = True
    split: bool = False
    n_test: int = 0
    description: str = ""
    stands_in_for: str = ""
    url: str = ""
    notes: str = ""

    @property
    def n_train(self) -> int | None:
        """Size of the training part (all samples without a split)."""
        return None if self.n_samples is None else self.n_samples - self.n_test

    @property
    def shape(self) -> str:
        """Human-readable shape, e.g. ``"150x4"``, ``"40+40 x 6x100"``."""
        if self.n_samples is None or self.n_features is None:
            return "-"
        feats = self.n_features
        per_sample = "x".join(map(str, feats)) if isinstance(feats, tuple) else str(feats)
        count = f"{self.n_train}+{self.n_test}" if self.split else str(self.n_samples)
        return f"{count} x {per_sample}"

    @property
    def fetch_command(self) -> str:
        """The shell command that downloads this set into the cache."""
        return f"rankmetric data fetch {self.name}"


@dataclass
class Dataset:
    """A loaded data set.

    Attributes
    ----------
    X : ndarray of float64
        Training part (all samples when there is no official split). Shape (n_samples,
        n_features) for tabular and image sets (images flattened row-major), (n_samples,
        n_channels, length) for multichannel sets, (n_samples, c, c) SPD matrices from
        :func:`~rankmetric.datasets.load_spd`.
    y : ndarray of shape (n_samples,), dtype int64
        Class codes ``0..n_classes-1``; ``target_names[y]`` gives the original labels.
    X_test, y_test : ndarray or None
        The official test part, or None when the source has no split.
    name : str
        Canonical name of the set.
    kind : {"tabular", "image", "multichannel", "spd"}
        ``"spd"`` for covariance matrices made by ``load_spd``.
    description : str
        What the data are, and the quirks the loader fixed.
    info : DatasetInfo or None
        The registry entry of the set.
    target_names : tuple of str
        Original class labels, indexed by code.
    lengths, lengths_test : ndarray of shape (n_samples,) or None
        True trial lengths of multichannel sets whose trials differ in length (before
        resampling to a common length); None otherwise.

    See Also
    --------
    rankmetric.datasets.load_dataset : Returns one.
    rankmetric.datasets.DatasetInfo : What is known before loading.

    Examples
    --------
    >>> from rankmetric.datasets import load_dataset
    >>> data = load_dataset("wine")
    >>> data.name, data.X.shape, data.X_test is None
    ('wine', (178, 13), True)
    """

    X: np.ndarray
    y: np.ndarray
    X_test: np.ndarray | None = None
    y_test: np.ndarray | None = None
    name: str = ""
    kind: str = "tabular"
    description: str = ""
    info: DatasetInfo | None = None
    target_names: tuple[str, ...] = ()
    lengths: np.ndarray | None = None
    lengths_test: np.ndarray | None = None

    @property
    def n_classes(self) -> int:
        """Number of classes (over the training and test parts)."""
        return len(self.target_names)

    @property
    def has_test(self) -> bool:
        """True when the set comes with an official test part."""
        return self.X_test is not None

    def __repr__(self) -> str:
        test = "" if self.X_test is None else f", X_test={self.X_test.shape}"
        return (
            f"Dataset(name={self.name!r}, kind={self.kind!r}, X={self.X.shape}{test}, "
            f"n_classes={self.n_classes})"
        )
