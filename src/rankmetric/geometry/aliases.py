"""The one table of SPD metric names: ours and pyRiemann's aliases.

pyRiemann names the affine-invariant Riemannian metric ``"riemann"``, the log-Euclidean one
``"logeuclid"`` and the Euclidean one ``"euclid"``; every RPL/SPD estimator, loss and geometry
function that takes a metric name resolves it through :func:`canonical_metric`, the one
resolver of metric names (the batch losses call it too, so their vector names ``"sqeuclidean"``,
``"cosine"``, ``"dot"`` go through it).
"""

from __future__ import annotations

__all__ = ["METRIC_ALIASES", "canonical_metric"]

#: Alias -> canonical metric name (canonical names map to themselves).
METRIC_ALIASES = {
    "airm": "airm",
    "riemann": "airm",
    "affine_invariant": "airm",
    "log_euclidean": "log_euclidean",
    "logeuclid": "log_euclidean",
    "log-euclidean": "log_euclidean",
    "euclidean": "euclidean",
    "euclid": "euclidean",
}


def canonical_metric(metric, allowed: tuple[str, ...] | None = None, *, name: str = "metric"):
    """The canonical name of an SPD metric, or ``metric`` itself when it is a callable.

    Parameters
    ----------
    metric : str or callable
        ``"airm"`` / ``"riemann"``, ``"log_euclidean"`` / ``"logeuclid"``, ... (case ignored).
        A name that is not in :data:`METRIC_ALIASES` stands for itself.
    allowed : tuple of str, optional
        Canonical names accepted here (default: all of :data:`METRIC_ALIASES`' values); may
        include names outside the table, such as ``"cosine"``.
    name : str, default="metric"
        Parameter name used in the error message.

    Returns
    -------
    str or callable

    Raises
    ------
    ValueError
        If ``metric`` is neither a callable nor a name (or alias) of an allowed metric; the
        message lists the allowed names and their aliases.

    See Also
    --------
    rankmetric.geometry.distance : The distance dispatcher that resolves names with it.
    rankmetric.geometry.METRIC_ALIASES : The accepted names and their canonical forms.

    Examples
    --------
    >>> canonical_metric("riemann")
    'airm'
    >>> canonical_metric("LogEuclid", ("airm", "log_euclidean"))
    'log_euclidean'
    """
    if callable(metric):
        return metric
    allowed = tuple(dict.fromkeys(METRIC_ALIASES.values())) if allowed is None else allowed
    canonical = None
    if isinstance(metric, str):  # a name outside the table (e.g. "cosine") stands for itself
        key = metric.lower()
        canonical = METRIC_ALIASES.get(key, key)
    if canonical is None or canonical not in allowed:
        aliases = sorted(k for k, v in METRIC_ALIASES.items() if v in allowed and k not in allowed)
        raise ValueError(
            f"{name} must be one of {allowed} (aliases: {', '.join(aliases)}), got {metric!r}."
        )
    return canonical
