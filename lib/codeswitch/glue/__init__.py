"""Koglish-GLUE (notebook 02): ``config`` (the ``glue`` section and the run spec), ``train``
(fine-tuning one backbone on one task), ``experiment`` (plan, run, tables, figures).

The experiment contract (:mod:`codeswitch.core.experiment`) at package level::

    from codeswitch import glue as G
    specs = G.plan(profile); results = G.run(profile); G.tables(results, profile); G.figures(results, profile)
"""

from .config import Config, GlueRun
from .experiment import figures, plan, run, run_one, stages, tables

__all__ = ["Config", "GlueRun", "plan", "stages", "run_one", "run", "tables", "figures"]
