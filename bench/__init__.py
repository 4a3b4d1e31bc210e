"""Benchmarks against the reference tools (`make bench`).

Every benchmark runs as `python -m bench.NAME`, so this is their entry: the app's runtime
knobs are set here, before a benchmark imports numpy or pyarrow, as the app's own entry
points set them (ndcg_labeler.runtime).
"""

from ndcg_labeler import runtime

runtime.apply()
