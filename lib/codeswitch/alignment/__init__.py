"""Alignment objectives for code-switching (notebook 06): ``config`` (the ``alignment``
section and the run specs of its stages), ``data`` (parallel corpora, word aligners,
the lexicon reader), ``loss``, ``train`` (the alignment trainer), ``evaluate`` (awesome-align's extraction, word
vectors, held-out retrieval), ``gluecos_data`` / ``gluecos_train`` / ``gluecos_evaluate`` / ``gluecos_export`` (GLUECoS
fine-tuning, scoring, and the task models as ``transformers`` classes); the experiment contract: ``plan`` (the
tables' rows, the specs, :func:`plan`, :func:`stages`), ``experiment`` (:func:`run_one`, :func:`run`, kept models),
``tables`` (Tables 3.1, 3.2 and their claims), ``figures`` (Figure 3.1), ``displays`` (what the notebook shows
one level deeper).

The experiment contract (:mod:`codeswitch.core.experiment`) at package level::

    from codeswitch import alignment as A
    specs = A.plan(profile); results = A.run(profile); A.tables(results, profile); A.figures(results, profile)
"""

from .config import AlignRun, Config, FigureRun, FinetuneRun
from .plan import plan, stages
from .experiment import run, run_one
from .tables import tables
from .figures import figures

from .config import SECTION, load
from .resources import resources
from .standins import build as build_standins
from .experiment import SELECTION_RULE, check_settings, kept_dir, kept_model, kept_plan, kept_row

NOTEBOOKS = ('06',)  # the notebooks this package serves

__all__ = ["Config", "AlignRun", "FinetuneRun", "FigureRun", "plan", "stages", "run_one", "run", "tables", "figures", "SECTION", "NOTEBOOKS", "load", "resources", "build_standins", "check_settings", "SELECTION_RULE", "kept_row", "kept_dir", "kept_plan", "kept_model"]
