"""What several papers share: ``sts`` (STS evaluation), ``glue_metrics``, ``romanize``
(text utilities), ``sentiment`` (sentiment data used by alignment's GLUECoS and by
CalBERT), ``fastpath`` (length bucketing, SDPA-ready masks, prefetching, the resumable
corpus encoder).  Imports only :mod:`codeswitch.core`.
"""
