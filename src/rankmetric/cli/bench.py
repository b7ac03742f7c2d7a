"""``rankmetric bench NAME``: reproduce the papers' tables (SSNE, RPL, WARCA) on available data."""

from __future__ import annotations

import argparse
import os

from ._args import check_device, check_output_dir

BENCH_NAMES = ("ssne-uci", "rpl-spd", "warca-reid", "all")

SUMMARY = "reproduce the papers' tables (ssne-uci, rpl-spd, warca-reid, all)"
DESCRIPTION = """\
Reproduce the three papers' tables on the data sets rankmetric can fetch:

  ssne-uci    SSNE Table 1 (k-NN accuracy, 5x2 CV, nine UCI sets) and Table 2 (images:
              Fashion-MNIST / MNIST-5k standing in for CIFAR-10 / OSC)
  rpl-spd     RPL Table 1 (F1, R@1, R@3, NMI) on EEG/MEG/motion covariance matrices, RPL against
              six deep baselines on the same SPDNet backbone and budget, 5 seeds; `--data
              PATH.npz` runs MDM, tangent space + logistic regression and RPL on your own trials
  warca-reid  WARCA's re-identification protocol (CMC + mAP over 10 identity splits, with and
              without re-ranking) on stand-in identity sets, and fit time against
              training-set size; `--data PATH` runs it on your own feature file
  all         the three in turn

Each (method, data set, fold, seed) cell is cached under RESULTS/cache, so an interrupted run
resumes. Outputs: RESULTS/<name>/<name>.md (Markdown tables, also printed), <name>.json (every
cell) and PNG plots. Fetch the data first: `rankmetric data fetch all`.
"""


def run_bench(args: argparse.Namespace) -> int:
    from ..bench import BenchConfig, run_all, run_benchmark

    if args.jobs < 1:
        raise ValueError(f"--jobs must be at least 1, got {args.jobs}.")
    if args.seeds is not None and args.seeds < 1:
        raise ValueError(f"--seeds must be at least 1, got {args.seeds}.")
    if args.name == "all" and (args.datasets or args.methods):
        raise ValueError("--datasets and --methods select within one benchmark, not with 'all'.")
    check_device(args.device)
    check_output_dir(args.results_dir, "--results-dir")
    datasets = _data_files(args) or (tuple(args.datasets) if args.datasets else None)
    config = BenchConfig(
        quick=args.quick,
        datasets=datasets,
        methods=tuple(args.methods) if args.methods else None,
        seeds=args.seeds,
        device=args.device,
    )
    kwargs = {
        "results_dir": args.results_dir,
        "n_jobs": args.jobs,
        "scheduler": args.scheduler,
        "use_cache": not args.no_cache,
        "verbose": not args.quiet,
    }
    if args.name == "all":
        summaries = run_all(config, **kwargs)
    else:
        summaries = [run_benchmark(args.name, config, **kwargs)]
    for summary in summaries:
        print(summary.markdown)
        for path in summary.plots:
            print(f"plot: {path}")
    print(f"\nresults written under {args.results_dir}/")
    return 0


def _data_files(args: argparse.Namespace) -> tuple[str, ...] | None:
    """``--data PATH ...``: users' feature files (``warca-reid``) or raw trial files
    (``rpl-spd``), each read and checked here, before any work."""
    if not getattr(args, "data", None):
        return None
    from .._safe_npz import check_regular_file
    from ..datasets import load_features, read_trial_file
    from ..datasets.user_features import FEATURE_SUFFIXES, is_feature_file

    if args.name not in ("warca-reid", "rpl-spd"):
        raise ValueError(f"--data runs a benchmark on your file: use it with warca-reid (feature "
                         f"files) or rpl-spd (trial files), not {args.name}.")  # fmt: skip
    if args.datasets:
        raise ValueError("give either --data PATH (your files) or --datasets NAME (stand-ins).")
    trials = args.name == "rpl-spd"
    for path in args.data:
        if trials and not str(path).lower().endswith(".npz"):
            raise ValueError(f"--data {path}: rpl-spd takes .npz trial files (X: trials, y).")
        if not trials and not is_feature_file(path):
            raise ValueError(f"--data {path}: expected a feature file "
                             f"({', '.join(FEATURE_SUFFIXES)}).")  # fmt: skip
        check_regular_file(path, f"--data {path}")
        read = read_trial_file if trials else load_features
        try:
            read(path)  # every format and content problem is reported before any work
        except ValueError as exc:
            raise ValueError(f"--data {exc}") from None
    return tuple(path if trials else _relative(path) for path in args.data)


def _relative(path: str) -> str:
    """``path`` relative to the working directory when the file is under it (results and the
    command they print then name it without the user's folder layout), else as given."""
    here, where = os.path.abspath(os.getcwd()), os.path.abspath(path)
    return os.path.relpath(where, here) if where.startswith(here + os.sep) else path


# alike: one add_argument call per option (argparse's idiom), as in other commands'
def register(parser: argparse.ArgumentParser, full: bool = True) -> None:
    """Add the options of ``bench`` to its ``parser``."""
    parser.add_argument("name", choices=BENCH_NAMES, help="which table to reproduce")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a few minutes: fewer folds/seeds/data sets, small budgets, no tuning",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="worker processes, one torch thread each (default: 1)",
    )
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run the cells on a Dask cluster, e.g. tcp://host:8786",
    )
    parser.add_argument(
        "--results-dir",
        default="results",
        metavar="DIR",
        help="output and cache folder (default: %(default)s)",
    )
    parser.add_argument(
        "--datasets",
        nargs="+",
        metavar="NAME",
        help="only these data sets (default: the benchmark's list)",
    )
    parser.add_argument(
        "--data",
        nargs="+",
        metavar="PATH",
        help="warca-reid on your own feature files (.npz/.csv/.parquet/.mat with X, y, "
        "optional cameras): random identity splits, validation identities held out of "
        "training, CMC + mAP table and plot; rpl-spd on your own trial files (.npz with X "
        "(n_trials, channels, time), y, optional domains or X_test, y_test): MDM, tangent "
        "space + logistic regression and RPL side by side",
    )
    parser.add_argument(
        "--methods",
        nargs="+",
        metavar="NAME",
        help="only these methods (default: the benchmark's list)",
    )
    parser.add_argument(
        "--seeds",
        type=int,
        metavar="N",
        help="CV repetitions / seeds / splits (default: the mode's own)",
    )
    parser.add_argument(
        "--device",
        default="cpu",
        help="torch device of the estimators (default: cpu, bit-reproducible)",
    )
    parser.add_argument("--no-cache", action="store_true", help="recompute every cell")
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="no progress bar (on a terminal) and no progress lines (elsewhere: one line per "
        "finished cell on standard error)",
    )
    parser.set_defaults(func=run_bench)
