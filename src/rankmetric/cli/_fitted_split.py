"""The hold-out ``rankmetric fit`` made, recorded in the model it saves, so that ``rankmetric
evaluate --model`` scores the same held-out part of the same file, never a row (or pair) the
model was trained on.

``fit --out`` stores a JSON dict ``fit_split_`` in the model: the data's name, a fingerprint of
the file (SHA-256 of its bytes; a bundled data set's name) and the options that decide the
split (``--test-size``, ``--test-domain``, ``--covariance-estimator``). ``evaluate`` given the
same file uses the recorded options and refuses a different one given on its command line.
"""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

__all__ = ["SPLIT_OPTIONS", "record_fit_split", "use_fit_split"]

#: The options that decide what ``rankmetric fit`` holds out, with the value used when absent.
SPLIT_OPTIONS = {"test_size": 0.3, "test_domain": None, "covariance_estimator": None}


_WHY_NOT = {
    "test_size": "another hold-out would score data it was trained on",
    "test_domain": "another held-out domain would score trials it was trained on",
    "covariance_estimator": "its input is covariances estimated that way",
}


def _fingerprint(source) -> str:
    """SHA-256 of the file ``source``'s bytes, or the name of a bundled data set."""
    path = Path(str(source))
    if not path.is_file():
        return f"name:{source}"
    with path.open("rb") as fh:
        return "sha256:" + hashlib.file_digest(fh, "sha256").hexdigest()


def _option(name: str) -> str:
    return "--" + name.replace("_", "-")


def record_fit_split(est, args: argparse.Namespace, source: str, how: str) -> None:
    """Record on ``est`` (attribute ``fit_split_``, saved with it; on a tuned learner, on the
    ``best_estimator_`` it saves) how ``rankmetric fit`` split ``source``: the options of
    :data:`SPLIT_OPTIONS` as given (or their defaults) and ``how``."""
    options = {name: getattr(args, name, None) for name in SPLIT_OPTIONS}
    saved = getattr(est, "best_estimator_", est)
    saved.fit_split_ = {"data": str(source), "fingerprint": _fingerprint(source), "how": how,
                      **{k: default if options[k] is None else options[k]
                         for k, default in SPLIT_OPTIONS.items()}}  # fmt: skip


def use_fit_split(args: argparse.Namespace, model, source: str) -> str | None:
    """Set ``args``' split options (those not given) to the ones ``model`` was fitted with when
    ``source`` is the file it was fitted on; a note for the report (``None`` without a model).

    Raises
    ------
    ValueError
        If an option given differs from the recorded one: another hold-out of the same file
        would score rows the model was trained on.
    """
    given = {name: getattr(args, name, None) for name in SPLIT_OPTIONS}
    record = getattr(model, "fit_split_", None)
    same_file = isinstance(record, dict) and record.get("fingerprint") == _fingerprint(source)
    for name, default in SPLIT_OPTIONS.items():
        recorded = record.get(name, default) if same_file else default
        if same_file and given[name] is not None and given[name] != recorded:
            raise ValueError(
                f"{_option(name)} {given[name]}: {args.model} was fitted on {source} with "
                f"{_option(name)} {recorded}; {_WHY_NOT[name]}. Leave {_option(name)} out to "
                "use the model's."
            )
        setattr(args, name, recorded if given[name] is None else given[name])
    if model is None:
        return None
    if same_file:
        return f"the hold-out {args.model} was fitted with (recorded in it: {record['how']})"
    if isinstance(record, dict):
        return (f"{source} is not the file {args.model} was fitted on ({record.get('data')}; "
                "its rows, if this file holds them, may have been trained on)")  # fmt: skip
    return (f"{args.model} does not record its hold-out (saved in Python, or by an earlier "
            f"rankmetric): --test-size {args.test_size} assumed, as rankmetric fit's "
            "default")  # fmt: skip
