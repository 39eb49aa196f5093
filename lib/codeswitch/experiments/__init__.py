"""One module per experiment (one per notebook): its config dataclass (the profile
section it reads), its run grid through the run cache, and its tables and figures.

``koglish`` (01), ``glue`` (02), ``concse`` (03, 04), ``contrastivemix`` (05),
``alignment`` (06), ``calbert`` (07).
"""
