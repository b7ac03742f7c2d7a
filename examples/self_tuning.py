"""Self-tuning: hyper-parameters chosen on held-out identities inside ``fit``
=============================================================================

A learner's defaults were chosen on a few stand-in sets; the right rank and regularisation
differ from one data set to the next. ``KISSMECV`` (one of the ``*CV`` learners of
``rankmetric.tuning``) holds a quarter of the *training* identities out whole, scores candidate
settings on them by rank-1 of the multi-camera re-identification protocol, searches by
successive halving within ``budget`` default fits, and refits the best on every training
identity. The test identities are never seen by the search.

Data: ``make_synthetic_reid`` (400 people seen by two cameras, 64 features mixing identity with
camera and nuisance variation; a labelled stand-in for VIPeR-like features), split into 200
training and 200 test identities. Seed 0.
"""

import matplotlib.pyplot as plt
import numpy as np

from rankmetric import KISSME, KISSMECV
from rankmetric.datasets import make_synthetic_reid
from rankmetric.evaluate import query_gallery_split, reid_scores

data = make_synthetic_reid(n_identities=400, random_state=0)
people = np.random.default_rng(0).permutation(np.unique(data.ids))
train = np.isin(data.ids, people[:200])
test = ~train
query, gallery = query_gallery_split(data.ids[test], data.camera[test], random_state=0)
ids, cams = data.ids[test], data.camera[test]


def rank1(transform) -> float:
    Z = transform(data.X[test])
    scores = reid_scores(Z[query], ids[query], cams[query], Z[gallery], ids[gallery],
                         cams[gallery], ranks=(1,))  # fmt: skip
    return float(scores["cmc"][1])


default = KISSME().fit(data.X[train], data.ids[train])
tuned = KISSMECV(KISSME(), budget=10, n_candidates=9, random_state=0)
tuned.fit(data.X[train], data.ids[train], cameras=data.camera[train])
print("chosen:", tuned.best_params_)
print(f"validation rank-1: Euclidean {tuned.reference_score_:.3f}, defaults "
      f"{tuned.default_score_:.3f}, tuned {tuned.best_score_:.3f}")  # fmt: skip
print(f"test rank-1:       Euclidean {rank1(lambda X: X):.3f}, defaults "
      f"{rank1(default.transform):.3f}, tuned {rank1(tuned.transform):.3f}")  # fmt: skip

results = tuned.tuning_results_
fig, ax = plt.subplots(figsize=(6, 3.4))
for r in sorted(set(results["round"])):
    at = [i for i, round_ in enumerate(results["round"]) if round_ == r]
    share = results["resource"][at[0]]
    ax.scatter([r] * len(at), [results["score"][i] for i in at], label=f"{share:.0%} of the groups")
ax.axhline(tuned.reference_score_, color="grey", ls="--", lw=1, label="Euclidean")
ax.set(xlabel="successive-halving round", ylabel="validation rank-1")
ax.set_title("KISSMECV: every candidate's validation score")
ax.legend(fontsize="small")
fig.tight_layout()
plt.show()
