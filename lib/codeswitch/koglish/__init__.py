"""Koglish (notebook 01): ``construct`` (code-switching by constituency trees; the parsers
in ``parse``, the released file layout in ``layout``), ``translate`` (the translators and
the MUSE reader they use), ``synthetic`` (the mini Koglish of the smoke profile; its grammar
in ``synthetic_grammar``, its tasks' label rules in ``synthetic_tasks``), ``data`` (loading
Koglish splits), ``config`` (the ``koglish`` section and the run spec), ``plan`` (the
construction runs), ``experiment`` (running them), ``walkthrough`` (sentences step by
step), ``tables`` (Table 1, the exclusion table, their claims), ``figures`` (Figure 1).
The data source of ``glue`` and ``concse``.

The experiment contract (:mod:`codeswitch.core.experiment`) at package level::

    from codeswitch import koglish as K
    results = K.run(profile); K.tables(results, profile); K.figures(results, profile)
"""

from .config import Config, KoglishRun
from .plan import plan, stages
from .experiment import run, run_one
from .tables import tables
from .figures import figures

from .config import SECTION, load
from .resources import resources
from .standins import build as build_standins

NOTEBOOKS = ('01',)  # the notebooks this package serves
SELECTION_RULE = None  # keeps no trained models

__all__ = ["Config", "KoglishRun", "plan", "stages", "run_one", "run", "tables", "figures", "SECTION", "NOTEBOOKS", "load", "resources", "build_standins", "SELECTION_RULE"]
