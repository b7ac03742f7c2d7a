"""Serving a learned metric: an index to build, filter, save, load and query
===========================================================================

A metric is learned to be used: a catalogue is embedded once and answers queries for months.
``rankmetric.Index`` keeps the embedded catalogue with its ids and per-item attributes, searches
it exactly (or approximately, with faiss: ``backend="ivf"``, ``"ivfpq"``, ``"hnsw"``), filters,
and saves to a folder that loads without executing code. ``evaluate`` reports what an
approximate backend costs in recall and in the retrieval scores, next to the exact figures.

Data: ``make_synthetic_reid`` (1,200 people seen by two cameras; a labelled stand-in for image
features). WARCA learns from 400 people; the other 800 people's camera-1 images are the
catalogue and their camera-0 images the queries. Seed 0.
"""

import tempfile

import matplotlib.pyplot as plt
import numpy as np

from rankmetric import WARCA, Index
from rankmetric.datasets import make_synthetic_reid

data = make_synthetic_reid(n_identities=1200, random_state=0)
people = np.random.default_rng(0).permutation(1200)
train = np.isin(data.ids, people[:400])
catalogue, query = ~train & (data.camera == 1), ~train & (data.camera == 0)
names = np.array([f"img-{i:05d}" for i in range(len(data.ids))])  # the items' ids

model = WARCA(n_components=16, random_state=0).fit(data.X[train], data.ids[train])
index = Index.build(model, data.X[catalogue], ids=names[catalogue],
                    attributes={"label": data.ids[catalogue]})  # fmt: skip
print(index)

distances, found = index.search(data.X[query][:2], k=3)
print("nearest ids of two queries:", found.tolist())
odd_people = index.search(data.X[query][:1], k=3, filter=lambda a: a["label"] % 2 == 1)[1]
print("the same among odd-numbered people only:", odd_people.tolist())

with tempfile.TemporaryDirectory() as folder:
    index.save(f"{folder}/catalogue_index")
    served = Index.load(f"{folder}/catalogue_index")  # no pickle: nothing is executed
    print("loaded:", served, " same answer:", served.search(data.X[query][:2], k=3)[1].tolist()
          == found.tolist())  # fmt: skip

approx = Index.build(model, data.X[catalogue], ids=names[catalogue],
                     attributes={"label": data.ids[catalogue]}, backend="ivf")  # fmt: skip
probes, recalls, cmc1 = [1, 2, 4, 8, 16], [], []
for nprobe in probes:
    approx.set_search(nprobe=nprobe)
    report = approx.evaluate(data.X[query], data.ids[query], k=10)
    recalls.append(report["recall@k"])
    cmc1.append(report["approximate"]["cmc@1"])
print(f"exact CMC@1 {report['exact']['cmc@1']:.3f}; IVF-Flat at nprobe 16: recall@10 "
      f"{recalls[-1]:.3f}, CMC@1 {cmc1[-1]:.3f}")  # fmt: skip

fig, ax = plt.subplots(figsize=(5.5, 3.4))
ax.plot(probes, recalls, "o-", label="recall@10 against exact search")
ax.plot(probes, cmc1, "s-", label="CMC@1 through the index")
ax.axhline(report["exact"]["cmc@1"], color="grey", ls="--", lw=1, label="CMC@1, exact")
ax.set(xscale="log", xlabel="nprobe (IVF cells searched per query)", ylim=(0, 1.05))
ax.set_xticks(probes, [str(p) for p in probes])
ax.set_title("What approximate search costs")
ax.legend(fontsize="small")
fig.tight_layout()
plt.show()
