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

Documentation with the figures and the exact commands: ``docs/benchmarks.md``.
"""
