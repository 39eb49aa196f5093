"""ConCSE (notebooks 03 and 04), cut along the experiment contract (:mod:`codeswitch.core.experiment`):

``config`` (the ``concse`` section and the run spec), ``plan`` (one spec per table cell, the labels, the stages),
``experiment`` (data, ``run_one``, ``run``, kept models), ``tables`` (tables and claims), ``figures``; ``loss``
(ConCSE and SimCSE losses) and ``train`` (the sentence-transformers trainer and the ConCSE encoder).

The experiment contract at package level::

    from codeswitch import concse as C
    results = C.run(profile, studies=["table3"]); C.tables(results, profile); C.figures(results, profile)
"""

from .config import Config, ConCSERun
from .plan import ABLATIONS, STUDIES, plan, stages
from .experiment import one_step, run, run_one
from .tables import tables
from .figures import figures

from .config import SECTION, load
from .resources import resources
from .experiment import SELECTION_RULE, kept_dir, kept_model, kept_plan, kept_row

NOTEBOOKS = ('03', '04')  # the notebooks this package serves
build_standins = None  # no stand-in data: the paper path in CI reads the Koglish stand-ins (koglish.standins)

__all__ = ["Config", "ConCSERun", "STUDIES", "ABLATIONS", "plan", "stages", "run_one", "one_step", "run", "tables", "figures", "SECTION", "NOTEBOOKS", "load", "resources", "build_standins", "SELECTION_RULE", "kept_row", "kept_dir", "kept_plan", "kept_model"]
