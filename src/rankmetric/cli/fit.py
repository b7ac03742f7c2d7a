"""``rankmetric fit METHOD``: fit a metric learner on a data set, report its k-NN accuracy, save it.

The options of each method are generated from the estimator's own hyper-parameters, so the
command line and the Python API never disagree. The data are read and split by
:func:`rankmetric.datasets.load_split`; this module parses, fits and prints.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import time
import warnings

from .._progress import ProgressLines
from .._registry import ESTIMATORS
from .._validation import DEPRECATED
from ._args import (
    add_feature_file_options,
    check_column_options,
    check_device,
    check_output_dir,
    check_output_file,
    check_random_state,
    feature_file_columns,
    junk_ids,
    option_error,
    parameter_type,
)
from ._fitted_split import record_fit_split
from ._help import parameter_help, parse_value, summary
from ._pairs import add_fit_pairs_option, check_pair_options, run_fit_pairs
from ._report import held_out_report, knn_report, model_preprocessing, print_report, reid_report

SUMMARY = "fit a metric learner on a data set and save it"
DESCRIPTION = (
    "Fit a metric learner on a data set's training part, print k-NN accuracy on its test part "
    "(learned metric vs Euclidean) and optionally save the model. `rankmetric fit METHOD --help` "
    "lists the method's parameters."
)

#: method name on the command line -> its entry of the table of estimators
METHODS = {e.name: e for e in ESTIMATORS if e.fit_input}


def _estimator_class(method: str):
    entry = METHODS[method]
    return getattr(importlib.import_module(entry.path), entry.cls)


def _add_method_parser(sub, method: str) -> None:
    cls = _estimator_class(method)
    parser = sub.add_parser(
        method,
        help=summary(cls),
        description=(
            f"{summary(cls)}  Every option below is a parameter of rankmetric.{cls.__name__}."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    kind = METHODS[method].fit_input
    parser.add_argument(
        "--data",
        required=not hasattr(cls, "fit_pairs"),  # else --data or --pairs, checked in run_fit
        metavar="NAME|PATH",
        help="data set name (see `rankmetric data list`) or your own feature file "
        "(.npz/.csv/.parquet/.mat with X, y, optional cameras and split; docs/datasets.md)"
        + (_SPD_DATA_HELP if kind == "spd" else ""),
    )
    parser.add_argument("--out", metavar="PATH", help="save the fitted model to this .npz file")
    parser.add_argument(
        "--test-size",
        type=float,
        default=0.3,
        help="held-out fraction when the data set has no official test split (with --pairs: "
        "of the items, whole groups of similar pairs, when the file has no pairs_test; 0: "
        "score the training pairs)",
    )
    parser.add_argument("-k", type=int, default=3, help="neighbours for the k-NN evaluation")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    if kind == "features":  # every learner on feature vectors has a tuned learner
        parser.add_argument(
            "--tune", nargs="?", type=float, const=10.0, metavar="BUDGET",
            help="choose the decisive hyper-parameters on identities/classes held out of the "
            "training part (successive halving, rankmetric.tuning), within BUDGET default fits "
            "(default 10); the options below are the search's starting point",
        )  # fmt: skip
    group = parser.add_argument_group(f"{cls.__name__} parameters")
    helps = parameter_help(cls)
    for name, default in cls().get_params(deep=False).items():
        group.add_argument(
            f"--{name.replace('_', '-')}",
            dest=f"param_{name}",
            default=default,
            metavar="VALUE",
            help=_parameter_help(helps, name, default),
            type=parameter_type(parse_value, default),
        )
    add_fit_pairs_option(parser, cls)
    if kind == "spd":
        _add_spd_options(parser)
    else:
        add_feature_file_options(parser)
    parser.set_defaults(func=run_fit, method=method)


# ----------------------------------------------------------------------------- SPD methods: trials


_SPD_DATA_HELP = (
    "; multichannel sets are turned into SPD covariance matrices; or a .npz file of raw trials: "
    "X of shape (n_trials, channels, time) and labels y, optionally X_test and y_test (else "
    "--test-size is held out) and domains (session or subject of each trial; domains_test beside "
    "X_test), which are passed to fit and transform: each domain is re-centred at its own mean"
)


def _add_spd_options(parser: argparse.ArgumentParser) -> None:
    """``--covariance-estimator`` and ``--test-domain`` (``--data`` may be raw trials)."""
    from ..preprocessing import Covariances

    choices = parameter_help(Covariances).get("estimator", "")
    choices = choices[choices.find("one of") :] if "one of" in choices else ""
    parser.add_argument(
        "--covariance-estimator",
        metavar="NAME",
        help=(
            "covariance estimator of each trial, passed to "
            f"rankmetric.preprocessing.Covariances(estimator=NAME){'; ' if choices else ''}"
            f"{choices}. None: the data set's own (OAS for the bundled multichannel sets), "
            "Covariances' default for a trial file"
        ).replace("%", "%%"),
    )

    parser.add_argument(
        "--test-domain",
        metavar="VALUE",
        help="cross-session / cross-subject evaluation: hold out every trial of this domain "
        "(a value of the trial file's domains array) as the test part, train on the others; "
        "the held-out domain is re-centred at its own mean, unseen in training",
    )


def _check_arguments(args: argparse.Namespace, params: dict) -> None:
    """Every option that can be checked before loading data and fitting (nothing is lost)."""
    if args.k < 1:
        raise ValueError(f"-k must be at least 1, got {args.k}.")
    if args.out:
        check_output_file(args.out)
    if "random_state" in params:
        check_random_state(params["random_state"])
    if "device" in params:
        check_device(params["device"])
    if params.get("checkpoint_dir") is not None:
        check_output_dir(params["checkpoint_dir"], "--checkpoint-dir")


def _load(args: argparse.Namespace):
    """The training and test parts of ``--data`` (:func:`~rankmetric.datasets.load_split`)."""
    from ..datasets import load_split

    try:
        return load_split(args.data, test_size=args.test_size,
                          spd=METHODS[args.method].fit_input == "spd",
                          columns=feature_file_columns(args),
                          covariance_estimator=getattr(args, "covariance_estimator", None),
                          test_domain=getattr(args, "test_domain", None))  # fmt: skip
    except ValueError as exc:
        raise option_error(exc) from None


def _fit(est, split, progress) -> float:
    """Fit ``est`` on the training part (with its cameras / domains); the seconds it took."""
    fit_params = {}
    if split.cameras_train is not None and "cameras" in inspect.signature(est.fit).parameters:
        fit_params["cameras"] = split.cameras_train  # the file's cameras (cross_camera)
    if split.domains_train is not None:
        fit_params["domains"] = split.domains_train  # each session / subject at its own mean
    progress(f"{split.source}: {len(split.X_train)} training and {len(split.X_test)} test items "
             f"({split.how}); fitting {type(est).__name__}")  # fmt: skip
    start = time.perf_counter()
    est.fit(split.X_train, split.y_train, **fit_params)
    progress(f"{type(est).__name__} fitted", start)
    return time.perf_counter() - start


def _check_parameters(est, given) -> None:
    """``est``'s hyper-parameter checks run now, before any data is read; an error names the
    option (``--max-iter``) where the library names the parameter (``max_iter``)."""
    if not hasattr(est, "_parameter_constraints"):
        return
    try:
        with warnings.catch_warnings():  # a renamed parameter's warning comes once, from fit
            warnings.simplefilter("ignore", FutureWarning)
            est._validate_params()
    except ValueError as exc:
        name, message = str(exc).split(" ", 1)[0], str(exc)
        if name in given:
            raise ValueError(f"--{name.replace('_', '-')}{message[len(name) :]}") from None
        raise


def _parameter_help(helps: dict[str, str], name: str, default) -> str:
    """A parameter's ``--help`` line; a deprecated alias still parses but is not offered."""
    if isinstance(default, str) and default == DEPRECATED:
        return argparse.SUPPRESS
    return helps.get(name, " ").replace("%", "%%")


def run_fit(args: argparse.Namespace) -> int:
    from ..datasets import is_feature_file
    from ..distributed import rank

    cls = _estimator_class(args.method)
    params = {k[len("param_") :]: v for k, v in vars(args).items() if k.startswith("param_")}
    _check_arguments(args, params)
    est = cls(**params)
    _check_parameters(est, params)  # before any data is read
    if getattr(args, "pairs", None):
        return run_fit_pairs(args, est)
    if getattr(args, "tune", None) is not None:
        from ..tuning import tuned_learner

        try:
            est = tuned_learner(args.method, est, args.tune)  # its budget checked: --tune
        except ValueError as exc:
            raise option_error(exc) from None
    if not args.data:
        raise ValueError("--data NAME is required (or --pairs PAIRS.npz for a pair learner).")
    check_pair_options(args)  # --item-column, --pair-columns: for --pairs only
    check_column_options(args, is_feature_file(args.data))
    split = _load(args)
    if args.k > len(split.X_train):
        raise ValueError(f"-k {args.k} exceeds the {len(split.X_train)} training samples of "
                         f"{args.data}.")  # fmt: skip
    progress = ProgressLines("fit", enabled=rank() == 0)
    fit_time = _fit(est, split, progress)
    if rank() != 0:  # under torchrun every rank holds the same model: one report, one file
        return 0
    if args.out:  # saved before the report: a failing evaluation cannot lose the model
        record_fit_split(est, args, args.data, split.how)  # for `evaluate --model`
        est.save(args.out)
    report = {"method": cls.__name__, "data": args.data, "split": split.how,
              "n_train": int(len(split.X_train)), "n_test": int(len(split.X_test)),
              "fit_seconds": round(fit_time, 3)}  # fmt: skip
    preprocess, report["preprocessing"] = model_preprocessing(est)
    report.update(held_out_report(est))
    report.update(knn_report(est, args.k, split, preprocess))
    if split.cameras_test is not None:
        report.update(reid_report(est.transform, split.X_test, split.y_test, split.cameras_test,
                                  split.split_test, preprocess=preprocess, rerank=args.rerank,
                                  junk_ids=junk_ids(getattr(args, "junk_id", None))))  # fmt: skip
    report.update({"tuned_params": est.best_params_} if hasattr(est, "best_params_") else {})
    progress("scored")
    if args.out:
        report["saved_to"] = args.out
    print_report(report, args.json)
    return 0


def register(parser: argparse.ArgumentParser, full: bool = True) -> None:
    """Add the methods of ``fit``; their options (which import every estimator) only when
    ``full``."""
    sub = parser.add_subparsers(dest="method_name", metavar="METHOD", required=True)
    if not full:
        return
    for method in METHODS:
        _add_method_parser(sub, method)
