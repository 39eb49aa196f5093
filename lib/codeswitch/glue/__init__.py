"""Koglish-GLUE (notebook 02): ``train`` (fine-tuning one backbone on one task),
``experiment`` (config, run grid, tables and figures).
"""
