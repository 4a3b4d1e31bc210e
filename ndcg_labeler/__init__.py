"""ndcg-labeler: graded relevance labels and trec_eval-exact NDCG in one web app.

Importing the package does nothing more: the app is built by `ndcg_labeler.factory.create_app`,
and the entry points (`app.py`, the command line) set the runtime knobs
(`ndcg_labeler.runtime.apply`).
"""
