"""Koglish (notebook 01): ``construct`` (code-switching by constituency trees),
``translate`` (the translators and the MUSE reader they use), ``synthetic`` (the mini
Koglish of the smoke profile), ``data`` (loading Koglish splits), ``experiment`` (the
dataset statistics and tables of notebook 01).  The data source of ``glue`` and ``concse``.
"""
