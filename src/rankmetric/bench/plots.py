"""PNG figures of the benchmarks (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from .learners import LABELS

__all__ = ["accuracy_bars", "metric_bars", "cmc_plot", "scaling_plot"]


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError(
            "the benchmark figures need matplotlib: pip install 'rankmetric[plot]'."
        ) from None

    return plt


def _grid(n_panels: int, width: float = 4.2, height: float = 3.0):
    plt = _pyplot()
    cols = min(3, n_panels)
    rows = math.ceil(n_panels / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False)
    for ax in axes.ravel()[n_panels:]:
        ax.set_visible(False)
    return fig, axes.ravel()


def _save(fig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    _pyplot().close(fig)
    return path


def accuracy_bars(
    table: Mapping[str, Mapping[str, dict]],
    paper: Mapping[str, Sequence[tuple[float, float]]],
    paper_methods: Sequence[str],
    out_dir: Path,
    name: str = "ssne_uci_accuracy.png",
) -> Path:
    """One panel per data set: our mean accuracy ± std per method, the paper's as hollow bars.

    Parameters
    ----------
    table : dict
        ``{dataset: {method: {"mean", "std", "scores"}}}`` (fractions in [0, 1]).
    paper : dict
        ``{dataset: ((mean %, std %), ...)}`` in the order of ``paper_methods``.
    """
    datasets = [d for d, row in table.items() if any(v["scores"] for v in row.values())]
    fig, axes = _grid(len(datasets))
    # strict=False: the grid of axes is padded with hidden panels, so it may be longer.
    for ax, dataset in zip(axes, datasets, strict=False):
        methods = [m for m, v in table[dataset].items() if v["scores"]]
        x = np.arange(len(methods))
        means = [100 * table[dataset][m]["mean"] for m in methods]
        stds = [100 * table[dataset][m]["std"] for m in methods]
        ax.bar(x - 0.2, means, 0.4, yerr=stds, capsize=3, label="ours", color="tab:blue")
        ref = [
            paper[dataset][paper_methods.index(m)] if m in paper_methods and dataset in paper
            else (np.nan, np.nan)
            for m in methods
        ]  # fmt: skip
        ax.bar(x + 0.2, [r[0] for r in ref], 0.4, yerr=[r[1] for r in ref], capsize=3,
               label="paper", fill=False, edgecolor="tab:gray")  # fmt: skip
        ax.set_xticks(x, [LABELS.get(m, m) for m in methods], rotation=45, ha="right", fontsize=7)
        low = np.nanmin([*means, *(r[0] for r in ref)])
        ax.set_ylim(max(0.0, low - 10), 100)
        ax.set_title(dataset, fontsize=9)
        ax.set_ylabel("k-NN accuracy (%)", fontsize=8)
    axes[0].legend(fontsize=7)
    return _save(fig, Path(out_dir) / name)


def metric_bars(
    table: Mapping[str, Mapping[str, Mapping[str, tuple[float, float]]]],
    metrics: Sequence[str],
    labels: Mapping[str, str],
    out_dir: Path,
    name: str,
) -> Path:
    """One panel per data set, grouped bars (one group per metric, one bar per method) ± std.

    Parameters
    ----------
    table : dict
        ``{dataset: {method: {metric: (mean, std)}}}`` with values in [0, 1].
    """
    datasets = list(table)
    fig, axes = _grid(len(datasets), width=5.0)
    # strict=False: the grid of axes is padded with hidden panels, so it may be longer.
    for ax, dataset in zip(axes, datasets, strict=False):
        methods = list(table[dataset])
        width = 0.8 / max(len(methods), 1)
        for i, method in enumerate(methods):
            vals = [table[dataset][method].get(m, (np.nan, np.nan)) for m in metrics]
            x = np.arange(len(metrics)) + (i - (len(methods) - 1) / 2) * width
            ax.bar(x, [100 * v[0] for v in vals], width, yerr=[100 * v[1] for v in vals],
                   capsize=2, label=labels.get(method, method))  # fmt: skip
        ax.set_xticks(np.arange(len(metrics)), metrics, fontsize=8)
        ax.set_ylim(0, 100)
        ax.set_title(dataset, fontsize=9)
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="upper center", ncol=min(4, len(names)), fontsize=7,
               bbox_to_anchor=(0.5, 0.0))  # fmt: skip
    return _save(fig, Path(out_dir) / name)


def cmc_plot(
    curves: Mapping[str, Mapping[str, Sequence[float]]],
    out_dir: Path,
    name: str,
    max_rank: int = 50,
) -> Path:
    """CMC curves, one panel per data set: ``{dataset: {method: mean CMC (rank 1..)}}``."""
    fig, axes = _grid(len(curves), width=4.8, height=3.6)
    # strict=False: the grid of axes is padded with hidden panels, so it may be longer.
    for ax, (dataset, by_method) in zip(axes, curves.items(), strict=False):
        for method, curve in by_method.items():
            curve = np.asarray(curve)[:max_rank]
            ax.plot(np.arange(1, len(curve) + 1), 100 * curve, label=LABELS.get(method, method))
        ax.set_xlabel("rank", fontsize=8)
        ax.set_ylabel("matching rate (%)", fontsize=8)
        ax.set_title(dataset, fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return _save(fig, Path(out_dir) / name)


def scaling_plot(
    times: Mapping[str, Mapping[int, float]],
    out_dir: Path,
    name: str,
    title: str = "",
    intervals: Mapping[str, Mapping[int, Sequence[float | None]]] | None = None,
) -> Path:
    """Fit time against the number of training points, log-log: ``{method: {N: s}}``.

    ``intervals`` (``{method: {N: (low, high)}}``, optional) draws each point's interval as an
    error bar; the y label then says the points are geometric means.
    """
    fig, ax = _pyplot().subplots(figsize=(5.5, 4.0))
    for method, by_n in times.items():
        ns = sorted(by_n)
        ys = np.array([by_n[n] for n in ns], dtype=float)
        bounds = (intervals or {}).get(method, {})
        low = np.array([_or_nan(bounds.get(n), 0) for n in ns], dtype=float)
        high = np.array([_or_nan(bounds.get(n), 1) for n in ns], dtype=float)
        yerr = np.nan_to_num(np.vstack([ys - low, high - ys]), nan=0.0)
        ax.errorbar(ns, ys, yerr=yerr if intervals else None, marker="o", capsize=3,
                    label=LABELS.get(method, method))  # fmt: skip
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("training points N")
    ax.set_ylabel("fit time (s, geometric mean, 95 % interval)" if intervals else
                  "fit time (s, median)")  # fmt: skip
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return _save(fig, Path(out_dir) / name)


def _or_nan(pair: Sequence[float | None] | None, i: int) -> float:
    value = None if pair is None else pair[i]
    return np.nan if value is None else value
