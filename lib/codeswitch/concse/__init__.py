"""ConCSE (notebooks 03 and 04): ``loss`` (ConCSE and SimCSE losses), ``train`` (the
sentence-transformers trainer and the ConCSE encoder), ``experiment`` (config, run grid,
tables, ablations, figures).
"""
