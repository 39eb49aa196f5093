"""CalBERT (notebook 07): ``config`` (the ``calbert`` section and the run specs of its two stages), ``data`` (the
Siamese pre-training pairs, where the task data lives), ``train`` (Siamese pre-training, MLM from scratch, classifier
fine-tuning), ``plan`` (the runs, typed, and the table rows), ``experiment`` (the data the runs read, run, kept
models), ``results`` (the cached records as frames), ``tables`` (Tables 4, 6–10, 12–14 and their claims), ``figures``
(Table 7 as bars).

The experiment contract (:mod:`codeswitch.core.experiment`) at package level::

    from codeswitch import calbert as CB
    specs = CB.plan(profile); results = CB.run(profile); CB.tables(results, profile); CB.figures(results, profile)
"""

from .config import Config, FinetuneRun, PretrainRun, ScratchRun
from .plan import plan, stages
from .experiment import run, run_one
from .tables import tables
from .figures import figures

from .config import SECTION, load
from .resources import resources
from .standins import build as build_standins
from .experiment import SELECTION_RULE, kept_dir, kept_model, kept_plan, kept_row

NOTEBOOKS = ('07',)  # the notebooks this package serves

__all__ = ["Config", "PretrainRun", "ScratchRun", "FinetuneRun", "plan", "stages", "run_one", "run", "tables", "figures", "SECTION", "NOTEBOOKS", "load", "resources", "build_standins", "SELECTION_RULE", "kept_row", "kept_dir", "kept_plan", "kept_model"]
