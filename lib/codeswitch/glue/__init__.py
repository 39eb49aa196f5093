"""Koglish-GLUE (notebook 02): ``config`` (the ``glue`` section and the run spec), ``data`` (the splits a run reads
and their hash), ``train`` (fine-tuning one backbone on one task); the experiment contract: ``plan`` (the run specs,
:func:`plan`, :func:`stages`), ``experiment`` (:func:`run_one`, :func:`run`, kept models), ``tables`` (Table 2 and
its claims), ``figures``.

The experiment contract (:mod:`codeswitch.core.experiment`) at package level::

    from codeswitch import glue as G
    specs = G.plan(profile); results = G.run(profile); G.tables(results, profile); G.figures(results, profile)
"""

from .config import Config, GlueRun
from .plan import plan, stages
from .experiment import run, run_one
from .tables import tables
from .figures import figures

from .config import SECTION, load
from .resources import resources
from .experiment import SELECTION_RULE, kept_dir, kept_model, kept_plan, kept_row

NOTEBOOKS = ('02',)  # the notebooks this package serves
build_standins = None  # no stand-in data: the paper path in CI reads the Koglish stand-ins (koglish.standins)

__all__ = ["Config", "GlueRun", "plan", "stages", "run_one", "run", "tables", "figures", "SECTION", "NOTEBOOKS", "load", "resources", "build_standins", "SELECTION_RULE", "kept_row", "kept_dir", "kept_plan", "kept_model"]
