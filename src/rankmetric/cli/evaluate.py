"""``rankmetric evaluate``: k-NN accuracy, retrieval and clustering scores of an embedding.

The embedding comes from a file (``.npz`` with ``X``/``y`` and optionally ``X_test``/``y_test``,
or ``.npy`` with ``--labels``) or from a saved model applied to a named data set.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np

from ._args import (
    add_feature_file_options,
    check_column_options,
    check_device,
    check_threads,
    feature_file_columns,
    is_table,
    junk_ids,
    option_error,
    vector_metric,
)
from ._fitted_split import use_fit_split
from ._pairs import add_evaluate_pairs_options, check_pair_options, run_evaluate_pairs
from ._report import (
    beside_euclidean,
    check_model_input,
    flat,
    model_preprocessing,
    print_report,
    reid_report,
    transform,
)

SCORES = ("knn", "retrieval", "clustering", "cv")

SUMMARY = "k-NN accuracy, Recall@K / P@1 / mAP@R and clustering scores of an embedding"
DESCRIPTION = (
    "Evaluate an embedding: from a .npz file (arrays X, y and optionally X_test, y_test; or "
    "embeddings, labels), from a .npy file with --labels, or by applying a saved model "
    "(`rankmetric fit ... --out PATH`) to a data set (--model PATH --data NAME, split as "
    "`rankmetric fit` splits it)."
)
EPILOG = """\
examples:
  rankmetric evaluate emb.npz                     # X, y (+ X_test, y_test) inside the archive;
                                                  # with cameras (cameras_test): re-id scores too
  rankmetric evaluate emb.npy --labels y.npy --ks 1 3 5 --json
  rankmetric evaluate --model warca.npz --data wine --scores knn retrieval clustering cv
  rankmetric evaluate --data iris                 # raw features: the Euclidean baseline
  rankmetric evaluate --model m.npz --data my_features.npz   # your file; re-id scores if
                                                  # it has cameras (Market-1501 protocol)

what is computed (definitions: docs/evaluation.md):
  knn         k-NN majority-vote accuracy, training part -> test part; leave-one-out
              within the set when there is no test part
  retrieval   Recall@K for each --ks, precision@1 and mAP@R, leave-one-out within the
              evaluation set (the test part if there is one)
  clustering  k-means with k = number of classes on the evaluation set; NMI and pairwise F1
  cv          5x2 stratified cross-validated k-NN accuracy on the training part (the whole
              set without a split); with --data the features are standardised in each fold
              and the --model is refitted there; on an embedding file, plain k-NN on it
"""


@dataclass
class _Embedded:
    """What is evaluated: an optional reference (training) part and the evaluation part."""

    X_eval: np.ndarray
    y_eval: np.ndarray
    X_ref: np.ndarray | None
    y_ref: np.ndarray | None
    source: str
    split: str
    raw: tuple | None = None  # (estimator or None, X, y) for the cross-validation
    cameras: np.ndarray | None = None  # of the evaluation part: re-id scores are printed
    eval_split: np.ndarray | None = None  # "query" / "gallery" / "test" of the evaluation part
    baseline: _Embedded | None = None  # with --model: the same rows, Euclidean distance


def _from_file(args) -> _Embedded:
    """An embeddings file (:func:`~rankmetric.datasets.read_embeddings`)."""
    from ..datasets import read_embeddings

    try:
        found = read_embeddings(args.embeddings, args.labels)
    except ValueError as exc:
        raise option_error(exc) from None
    raw = (None, flat(found.X_train), found.y_train)
    if len(found.y_test) == 0:
        return _Embedded(flat(found.X_train), found.y_train, None, None, found.source, found.how,
                         raw, found.cameras_train)  # fmt: skip
    return _Embedded(flat(found.X_test), found.y_test, flat(found.X_train), found.y_train,
                     found.source, found.how, raw, found.cameras_test)  # fmt: skip


def _with_baseline(build, model) -> _Embedded:
    """``build(embed, model)``: the model's flat embedding (``embed(X, domains)``; the raw
    features without a model) and, beside it as its ``baseline``, the same rows under the
    Euclidean distance on the features the model's learned part receives (after its
    preprocessing, as ``rankmetric fit`` reports it), so that a model that does worse on this
    data than the plain distance is seen to."""
    if model is None:
        return build(lambda X, domains=None: flat(X), None)
    embedded = build(lambda X, domains=None: flat(transform(model, X, domains)), model)
    preprocess, _ = model_preprocessing(model)
    same = (lambda X: X) if preprocess is None else preprocess
    embedded.baseline = build(lambda X, domains=None: flat(same(X)), None)
    return embedded


def _from_model(args, model) -> _Embedded:
    from ..datasets import load_split

    split = load_split(args.data, test_size=args.test_size, spd=None)  # as `rankmetric fit`
    check_model_input(model, split.X_test, args.data, f"--model {args.model}")
    data = split.dataset  # the set before the hold-out, for the cross-validation
    source = f"{args.model or 'raw features'} on {args.data}"
    return _with_baseline(
        lambda embed, est: _Embedded(embed(split.X_test), split.y_test, embed(split.X_train),
                                     split.y_train, source, split.how, (est, data.X, data.y)),
        model,
    )  # fmt: skip


def _evaluated_rows(data, args) -> tuple[np.ndarray, np.ndarray, str]:
    """``(evaluated rows, reference rows, where they come from)`` of a user's feature file.

    Its ``split`` column when it has one; else, with ``--model``, the hold-out that ``rankmetric
    fit`` made of the same file (same rule, seed and ``--test-size``), so that the rows the
    model was trained on are never scored; else (raw features, nothing trained) every row."""
    from ..datasets import holdout_rows

    if data.split is not None:
        evaluated, reference = data.rows("test", "query", "gallery"), data.rows("train")
        if evaluated.size == 0:
            raise ValueError(f"{args.data}: the split column has no test, query or gallery rows.")
        return evaluated, reference, "split column"
    if args.model:
        train, test, how = holdout_rows(data, args.test_size)
        return test, train, f"no split column: rankmetric fit's hold-out, {how}"
    return data.rows(), np.arange(0), "all rows"


def _from_user_file(args, model) -> _Embedded:
    """A user's feature file (``--data PATH``), embedded by ``--model`` when given: its test
    rows (``split`` column, else the hold-out ``rankmetric fit`` made) are evaluated against its
    training rows; test identities absent from training are evaluated leave-one-out."""
    from ..datasets import load_features

    data = load_features(args.data, **feature_file_columns(args))
    check_model_input(model, data.X, args.data, f"--model {args.model}")
    source = f"{args.model or 'raw features'} on {args.data}"
    evaluated, reference, rows = _evaluated_rows(data, args)
    sub = lambda a: None if a is None else a[evaluated]  # noqa: E731
    with_reference = reference.size and np.isin(data.y[evaluated], data.y[reference]).all()
    if with_reference:
        how = f"train -> test rows ({rows})"
    else:
        how = f"test rows, leave-one-out ({rows})" if reference.size else f"{rows}, leave-one-out"

    def build(embed, est) -> _Embedded:
        Z = embed(data.X)
        ref = (Z[reference], data.y[reference]) if with_reference else (None, None)
        return _Embedded(Z[evaluated], data.y[evaluated], *ref, source, how,
                         (est, data.X, data.y), sub(data.cameras), sub(data.split))  # fmt: skip

    return _with_baseline(build, model)


def _from_trial_file(args, model) -> _Embedded:
    """Raw trials embedded by an SPD ``--model``: covariances (``--covariance-estimator``, as
    at fit) and the split of ``rankmetric fit rpl|spdnet`` on the same file (its ``X_test``, a
    held-out domain with ``--test-domain``, else the stratified ``--test-size`` hold-out), with
    the file's ``domains`` passed to ``transform`` when the model was fitted with domains."""
    from ..datasets import load_split

    if not hasattr(model, "weights_"):
        raise ValueError(f"{args.data} holds raw trials: --model must be an SPD network "
                         "(rankmetric fit rpl|spdnet).")  # fmt: skip
    try:
        split = load_split(args.data, test_size=args.test_size, spd=True,
                           covariance_estimator=args.covariance_estimator,
                           test_domain=args.test_domain)  # fmt: skip
    except ValueError as exc:
        raise option_error(exc) from None
    check_model_input(model, split.X_test, args.data, f"--model {args.model}")
    source = f"{args.model} on the trials of {args.data}"
    return _with_baseline(
        lambda embed, _: _Embedded(embed(split.X_test, split.domains_test), split.y_test,
                                   embed(split.X_train, split.domains_train), split.y_train,
                                   source, split.how),
        model,
    )  # fmt: skip


def _knn_score(e: _Embedded, args) -> dict[str, float]:
    from ..evaluate import knn_accuracy

    alone = e.X_ref is None  # no reference part: leave-one-out within the evaluated items
    X_ref, y_ref = (e.X_eval, e.y_eval) if alone else (e.X_ref, e.y_ref)
    accuracy = knn_accuracy(X_ref, y_ref, e.X_eval, e.y_eval, k=args.k, exclude_self=alone,
                            metric=args.metric, device=args.device)  # fmt: skip
    return {f"knn{args.k}_accuracy": accuracy}


def _cv_score(e: _Embedded, args) -> dict[str, float]:
    from ..evaluate import repeated_cv_knn

    estimator, X, y = e.raw
    result = repeated_cv_knn(
        estimator,
        X,
        y,
        k=args.k,
        standardize=args.data is not None and X.ndim == 2,
        random_state=args.seed,
        verbose=args.verbose,
    )
    return {f"cv5x2_knn{args.k}_mean": result.mean, f"cv5x2_knn{args.k}_std": result.std}


def evaluate_embedding(e: _Embedded, args) -> dict[str, float]:
    """The requested scores of an embedding, as one flat dict."""
    from ..evaluate import clustering_scores, retrieval_scores

    scores: dict[str, float] = {}
    if "knn" in args.scores:
        scores.update(_knn_score(e, args))
    if "retrieval" in args.scores:
        scores.update(
            retrieval_scores(e.X_eval, e.y_eval, ks=args.ks, metric=args.metric, device=args.device)
        )
    if "clustering" in args.scores:
        found = clustering_scores(e.X_eval, e.y_eval, random_state=args.seed)
        scores.update({f"clustering_{k}": v for k, v in found.items()})
    if "cv" in args.scores:
        scores.update(_cv_score(e, args))
    if e.cameras is not None:  # re-id scores (Market-1501 protocol)
        junk = junk_ids(getattr(args, "junk_id", None))
        scores.update(reid_report(None, e.X_eval, e.y_eval, e.cameras, e.eval_split, args.metric,
                                  rerank=args.rerank, junk_ids=junk))  # fmt: skip
    return scores


def run_evaluate(args: argparse.Namespace) -> int:
    import torch

    check_threads(args.threads)
    check_device(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.pairs:
        return run_evaluate_pairs(args)
    from ..datasets import is_feature_file, is_trial_file
    from ..io import load_model

    if args.embeddings and not args.data and is_table(args.embeddings):
        args.data, args.embeddings = args.embeddings, None  # read as a feature file
    if bool(args.embeddings) == bool(args.data):
        raise ValueError("give either an embeddings file or --data NAME (with --model PATH).")
    if args.model and not args.data:
        raise ValueError("--model needs --data NAME: the data set to embed.")

    check_column_options(args, bool(args.data) and is_feature_file(args.data))
    check_pair_options(args)  # --item-column, --pair-columns: for --pairs only
    model = load_model(args.model) if args.model else None
    model_split = use_fit_split(args, model, args.data)  # --test-size ... as the fit's
    if args.embeddings:
        embedded = _from_file(args)
    elif args.model and is_trial_file(args.data):
        embedded = _from_trial_file(args, model)
    elif is_feature_file(args.data):
        embedded = _from_user_file(args, model)
    else:
        embedded = _from_model(args, model)
    scores = evaluate_embedding(embedded, args)
    report = {
        "source": embedded.source,
        "split": embedded.split,
        **({"model_split": model_split} if model_split else {}),
        "n_evaluated": int(len(embedded.X_eval)),
        "n_reference": None if embedded.X_ref is None else int(len(embedded.X_ref)),
        "n_features": int(embedded.X_eval.shape[1]),
        "n_classes": int(len(np.unique(embedded.y_eval))),
        "metric": args.metric,
        "seed": args.seed,
        "scores": scores,
    }
    if embedded.baseline is not None:
        report.update(beside_euclidean(scores, evaluate_embedding(embedded.baseline, args)))
    print_report(report, args.json)
    return 0


# alike: one add_argument call per option (argparse's idiom), as in other commands'
def register(parser: argparse.ArgumentParser, full: bool = True) -> None:
    """Add the options of ``evaluate`` to its ``parser``."""
    parser.add_argument(
        "embeddings",
        nargs="?",
        metavar="EMBEDDINGS",
        help="a .npz (X, y[, X_test, y_test]) or .npy (with --labels) file, or a table of "
        "embeddings (.csv/.parquet/.mat: read as --data reads your feature file)",
    )
    parser.add_argument(
        "--labels",
        metavar="PATH",
        help="labels of a .npy embedding: .npy, or text with one label per line",
    )
    parser.add_argument("--model", metavar="PATH", help="a saved rankmetric model (.npz)")
    parser.add_argument(
        "--data",
        metavar="NAME|PATH",
        help="data set to embed with --model (see `rankmetric data list`), or your own "
        "feature file (.npz/.csv/.parquet/.mat: X, y, optional cameras, split); alone, "
        "evaluates its raw features; with cameras, re-id CMC/mAP/mINP are printed too",
    )
    parser.add_argument(
        "--covariance-estimator",
        metavar="NAME",
        help="with --model of an SPD network and a .npz file of raw trials (X of shape "
        "(n_trials, channels, time), y, optionally X_test, y_test, domains): the covariance "
        "estimator the model was fitted with (rankmetric fit rpl --covariance-estimator)",
    )
    parser.add_argument(
        "--test-domain",
        metavar="VALUE",
        help="raw trials only: evaluate on this held-out domain, as `rankmetric fit rpl "
        "--test-domain` split the file",
    )
    parser.add_argument(
        "--test-size",
        type=float,
        help="held-out fraction when the data set has no official test split, or the pair "
        "file no pairs_test (default: with --model on the file it was fitted on, the one it "
        "was fitted with, recorded in it; else 0.3, as `rankmetric fit`)",
    )
    parser.add_argument(
        "--scores",
        nargs="+",
        choices=SCORES,
        default=list(SCORES[:3]),
        metavar="NAME",
        help=f"what to compute, among {', '.join(SCORES)} (default: %(default)s)",
    )
    parser.add_argument(
        "-k", "--k", type=int, default=3, help="neighbours in the k-NN vote (default: %(default)s)"
    )
    parser.add_argument(
        "--ks",
        type=int,
        nargs="+",
        default=[1, 3],
        metavar="K",
        help="K of Recall@K (default: %(default)s)",
    )
    parser.add_argument(
        "--metric",
        type=vector_metric,
        choices=("euclidean", "sqeuclidean", "cosine"),
        default="euclidean",
        help="distance in the embedding (default: %(default)s)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of k-means and of the cross-validation folds (default: 0)",
    )
    parser.add_argument(
        "--device", help="torch device for the searches (default: CUDA if available)"
    )
    parser.add_argument("--threads", type=int, help="torch CPU threads")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("-v", "--verbose", action="store_true", help="progress bars")
    add_evaluate_pairs_options(parser)
    add_feature_file_options(parser)
    parser.set_defaults(func=run_evaluate)
