"""Koglish-GLUE (notebook 02): ``config`` (the ``glue`` section and the run spec), ``train``
(fine-tuning one backbone on one task), ``experiment`` (plan, run, tables, figures).

The experiment contract (:mod:`codeswitch.core.experiment`) at package level::

    from codeswitch import glue as G
    specs = G.plan(profile); results = G.run(profile); G.tables(results, profile); G.figures(results, profile)
"""

from .config import Config, GlueRun
from .experiment import figures, plan, run, run_one, stages, tables

from .config import SECTION, load
from .resources import resources
from .experiment import SELECTION_RULE, kept_dir, kept_model, kept_plan, kept_row

NOTEBOOKS = ('02',)  # the notebooks this package serves
build_standins = None  # no stand-in data: the paper path in CI reads the Koglish stand-ins (koglish.standins)

__all__ = ["Config", "GlueRun", "plan", "stages", "run_one", "run", "tables", "figures", "SECTION", "NOTEBOOKS", "load", "resources", "build_standins", "SELECTION_RULE", "kept_row", "kept_dir", "kept_plan", "kept_model"]
