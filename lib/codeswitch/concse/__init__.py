"""ConCSE (notebooks 03 and 04): ``config`` (the ``concse`` section and the run spec), ``loss``
(ConCSE and SimCSE losses), ``train`` (the sentence-transformers trainer and the ConCSE
encoder), ``experiment`` (plan, run, tables, figures).

The experiment contract (:mod:`codeswitch.core.experiment`) at package level::

    from codeswitch import concse as C
    results = C.run(profile, studies=["table3"]); C.tables(results, profile); C.figures(results, profile)
"""

from .config import Config, ConCSERun
from .experiment import ABLATIONS, STUDIES, figures, one_step, plan, run, run_one, stages, tables

from .config import SECTION, load
from .resources import resources
from .experiment import SELECTION_RULE, kept_dir, kept_model, kept_plan, kept_row

NOTEBOOKS = ('03', '04')  # the notebooks this package serves
build_standins = None  # no stand-in data: the paper path in CI reads the Koglish stand-ins (koglish.standins)

__all__ = ["Config", "ConCSERun", "STUDIES", "ABLATIONS", "plan", "stages", "run_one", "one_step", "run", "tables", "figures", "SECTION", "NOTEBOOKS", "load", "resources", "build_standins", "SELECTION_RULE", "kept_row", "kept_dir", "kept_plan", "kept_model"]
