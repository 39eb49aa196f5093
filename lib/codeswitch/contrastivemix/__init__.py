"""ContrastiveMix dense retrieval (notebook 05): ``data`` (training sets, corpora,
qrels), ``codemix`` (dictionary code-mixing and its MUSE reader), ``loss`` (in-batch IR
loss and the alignment term), ``train`` (the dual-encoder trainer), ``evaluate`` (BM25,
dense ranking, hybrid fusion, metrics), ``lucene`` (Pyserini BM25), ``section3_3``;
the experiment contract: ``config`` (:class:`Config` and the run specs), ``experiment``
(:func:`plan`, :func:`run_one`, :func:`run`), ``tables``, ``figures``.
"""

from .config import Config, load
from .experiment import plan, run, run_one, stages
from .figures import figures
from .tables import tables

from .config import SECTION, load
from .resources import resources
from .standins import build as build_standins
from .experiment import SELECTION_RULE, kept_dir, kept_model, kept_plan, kept_row

NOTEBOOKS = ('05',)  # the notebooks this package serves

__all__ = ["Config", "load", "plan", "stages", "run_one", "run", "tables", "figures", "SECTION", "NOTEBOOKS", "load", "resources", "build_standins", "SELECTION_RULE", "kept_row", "kept_dir", "kept_plan", "kept_model"]
