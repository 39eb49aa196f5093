"""Koglish (notebook 01): ``construct`` (code-switching by constituency trees),
``translate`` (the translators and the MUSE reader they use), ``synthetic`` (the mini
Koglish of the smoke profile), ``data`` (loading Koglish splits), ``config`` (the
``koglish`` section and the run spec), ``experiment`` (the construction runs, the
dataset statistics, the tables and figure of notebook 01).  The data source of ``glue``
and ``concse``.

The experiment contract (:mod:`codeswitch.core.experiment`) at package level::

    from codeswitch import koglish as K
    results = K.run(profile); K.tables(results, profile); K.figures(results, profile)
"""

from .config import Config, KoglishRun
from .experiment import figures, plan, run, run_one, stages, tables

from .config import SECTION, load
from .resources import resources
from .standins import build as build_standins

NOTEBOOKS = ('01',)  # the notebooks this package serves
SELECTION_RULE = None  # keeps no trained models

__all__ = ["Config", "KoglishRun", "plan", "stages", "run_one", "run", "tables", "figures", "SECTION", "NOTEBOOKS", "load", "resources", "build_standins", "SELECTION_RULE"]
