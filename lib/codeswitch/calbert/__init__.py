"""CalBERT (notebook 07): ``data`` (the Siamese pre-training pairs), ``train``
(Siamese pre-training and classifier fine-tuning), ``experiment``.
"""
