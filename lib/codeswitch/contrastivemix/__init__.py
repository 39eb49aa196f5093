"""ContrastiveMix dense retrieval (notebook 05): ``data`` (training sets, corpora,
qrels), ``codemix`` (dictionary code-mixing and its MUSE reader), ``loss`` (in-batch IR
loss and the alignment term), ``train`` (the dual-encoder trainer), ``evaluate`` (BM25,
dense ranking, hybrid fusion, metrics), ``experiment``.
"""
