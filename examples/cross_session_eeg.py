"""Cross-session EEG: re-centre each session, then MDM, tangent space or RPL
============================================================================

SelfRegulationSCP1 (UEA archive, ``rankmetric data fetch SelfRegulationSCP1``): slow cortical
potentials of one subject, 6 channels; its official train and test files were recorded at
different times, so the test file stands for a new session. Slow cortical potentials live in a
trial's mean signal, which a covariance discards, so each trial is stacked under the class-mean
trials of the first session before its covariance is taken (pyRiemann's ``ERPCovariances``, an
18 × 18 SPD matrix per trial; as ``benchmarks/bench_recentring.py``). A classifier fitted on the
first session meets a shifted second one: each session's covariance matrices sit around their own
mean. ``DomainRecentering`` (pyRiemann's ``TLCenter``) moves each session to the identity at its
own Riemannian mean (the new session's mean is taken from its trials, without their labels);
the session labels reach it through scikit-learn's metadata routing (``domains=``), in ``fit``
and in ``predict``. Three classifiers after it: ``MDM`` (minimum distance to the class means),
tangent space + logistic regression, and ``RPLEmbedding`` + 5-NN. Seed 0; one thread.

Here re-centring lifts MDM most (its class means are where the shift hurts), moves the tangent
space little, and the network is level with the tangent space on this one subject; the table of
``benchmarks/bench_recentring.py`` has the same comparison over seeds and the SCP2 set, where
nothing rises above chance.
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np
import sklearn
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline

from rankmetric import MDM, RPLEmbedding
from rankmetric.datasets import load_dataset
from rankmetric.preprocessing import Covariances, DomainRecentering, TangentSpace

torch.set_num_threads(1)
sklearn.set_config(enable_metadata_routing=True)  # session labels travel as domains=
data = load_dataset("SelfRegulationSCP1")
X = np.concatenate([data.X, data.X_test])
y = np.concatenate([data.y, data.y_test])
session = np.repeat([0, 1], [len(data.y), len(data.y_test)])
train, test = session == 0, session == 1
prototypes = np.concatenate([X[train & (y == k)].mean(0) for k in np.unique(y)])  # session 1 only
X = np.concatenate([np.broadcast_to(prototypes, (len(X), *prototypes.shape)), X], axis=1)
print("super-trials:", X.shape, " session sizes:", np.bincount(session))

classifiers = {
    "MDM": lambda: MDM(),
    "TS + LR": lambda: make_pipeline(TangentSpace(), LogisticRegression(max_iter=1000)),
    "RPL + 5-NN": lambda: make_pipeline(
        RPLEmbedding(max_iter=300, random_state=0), KNeighborsClassifier(5)
    ),
}
scores = {}
for name, make in classifiers.items():
    for recentre in (False, True):
        steps = [Covariances("lwf")] + ([DomainRecentering()] if recentre else []) + [make()]
        model = make_pipeline(*steps)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # RPL may keep its untrained network: scored anyway
            fit_domains = {"domains": session[train]} if recentre else {}
            model.fit(X[train], y[train], **fit_domains)
        score_domains = {"domains": session[test]} if recentre else {}
        accuracy = model.score(X[test], y[test], **score_domains)
        scores[name, recentre] = accuracy
        print(f"{name:11s} {'re-centred' if recentre else 'as recorded':12s} {accuracy:.3f}")

fig, ax = plt.subplots(figsize=(6, 3.2))
positions = np.arange(len(classifiers))
for offset, recentre in [(-0.2, False), (0.2, True)]:
    values = [scores[name, recentre] for name in classifiers]
    label = "each session re-centred" if recentre else "as recorded"
    ax.bar(positions + offset, values, width=0.4, label=label)
ax.axhline(0.5, color="grey", lw=1, ls="--", label="chance")
ax.set_xticks(positions, list(classifiers))
ax.set(ylim=(0.4, 1.0), ylabel="accuracy on the second session")
ax.set_title("SelfRegulationSCP1: trained on session 1, tested on session 2")
ax.legend(fontsize="small")
fig.tight_layout()
plt.show()
