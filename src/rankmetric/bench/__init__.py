"""Reproductions of the three papers' tables behind ``rankmetric bench``.

=====================  ===================================================================
``grid``               cells (method × data set × fold × seed), cached, run in processes or Dask
``runner``             ``run_benchmark`` / ``run_all``: cells → Markdown, JSON, PNG in results/
``ssne``               SSNE Table 1 (UCI, 5×2 CV k-NN) and Table 2 (image stand-ins)
``rpl``                RPL Table 1 (F1, R@1, R@3, NMI) on SPD stand-ins, deep baselines on SPDNet
``warca``              WARCA's re-identification CMC on stand-in identities, fit time against N
``learners``           the feature-vector learners and their validation-split tuning
``spdnet_baselines``   the RPL table's rows: SPDNetEmbedding, one loss per row, one network
``reid_data``          the stand-in identity sets (synthetic two-camera, Fashion-MNIST views)
``plots``              the figures (matplotlib, Agg)
=====================  ===================================================================

The public names below (``__all__``) are what the scripts in ``benchmarks/`` and the tests use;
they are imported from the submodule that defines them on first use (``import rankmetric.bench``
stays light). Names with a leading underscore in the submodules are private: nothing outside
the package imports them (``tests/test_private_imports.py``).

- Running a benchmark: :class:`BenchConfig`, :func:`run_benchmark`, :func:`run_all`,
  :data:`BENCHMARKS`, :class:`Summary`; a grid of cells: :class:`Cell`, :func:`run_grid`,
  :func:`execute_cell`, the cache (:func:`is_cached`, :func:`store_result`,
  :func:`result_digest`).
- Tables of results: :func:`mean_std`, :func:`format_pm`; what is significant:
  :func:`mean_ci` (95 % t-interval), :func:`paired_p_value` (paired t-test over splits),
  :func:`compare_rows` (each row against the reference and the best row), :func:`format_ci`,
  :func:`format_comparison`, :func:`below_reference_note`, :data:`BELOW_MARK`;
  :func:`format_number`,
  :func:`markdown_table`, :func:`group_by`, :func:`select`, :func:`split_failures`,
  :func:`strip_timings`, :func:`json_safe`, :func:`write_json`; cell runners:
  :func:`cell_runner`, :func:`captured_warnings`.
- The re-identification protocol of the WARCA table: :func:`load_reid` (the stand-in sets),
  :func:`reid_features` (the table's features of a set, fitted on training rows),
  :func:`identity_holdout` (the inner split: held-out identities) and :func:`loo_recall_at_1`
  (its validation score).

Documentation with the figures and the exact commands: ``docs/benchmarks.md``.
"""

from __future__ import annotations

import importlib

#: Submodule → the public names it defines (imported from there on first use).
_EXPORTS = {
    "_common": "BenchConfig Summary captured_warnings cell_runner format_number format_pm group_by "
    "json_safe markdown_table mean_std mean_ci paired_p_value compare_rows format_ci "
    "format_comparison below_reference_note BELOW_MARK select split_failures strip_timings "
    "write_json",
    "grid": "Cell execute_cell is_cached result_digest run_grid store_result",
    "runner": "BENCHMARKS run_all run_benchmark",
    "reid_data": "load_reid",
    "warca": "identity_holdout",
    "learners": "loo_recall_at_1",
}
#: Public name → (submodule, name there).
_LAZY = {name: (module, name) for module, names in _EXPORTS.items() for name in names.split()}
_LAZY["reid_features"] = ("warca", "_features")

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        module, attribute = _LAZY[name]
        return getattr(importlib.import_module(f"{__name__}.{module}"), attribute)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted({*globals(), *__all__})
