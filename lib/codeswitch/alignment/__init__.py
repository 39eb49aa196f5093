"""Alignment objectives for code-switching (notebook 06): ``data`` (parallel corpora,
word aligners, the lexicon reader), ``loss``, ``train`` (the alignment trainer),
``gluecos_data`` / ``gluecos_train`` / ``gluecos_evaluate`` (GLUECoS fine-tuning and
scoring), ``experiment``.
"""
