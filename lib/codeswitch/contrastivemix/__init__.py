"""ContrastiveMix dense retrieval (notebook 05): ``data`` (training sets, corpora,
qrels) and ``synthetic`` (the smoke set), ``codemix`` (dictionary code-mixing and its MUSE reader), ``loss`` (in-batch
IR loss and the alignment term), ``train`` (the dual-encoder trainer) and ``mixing`` (the texts its steps encode),
``evaluate`` (BM25, dense ranking, hybrid fusion, metrics), ``lucene`` (Pyserini BM25), ``section3_3``;
the experiment contract: ``config`` (:class:`Config` and the run specs), ``plan`` (:func:`plan`, :func:`stages`),
``experiment`` (:func:`run_one`, :func:`run`, kept models; what the runs read: ``inputs``; the evaluation runs:
``retrieval``), ``tables``, ``figures``; ``__main__`` (training apart from the notebook).
"""

from .config import SECTION, Config, load
from .experiment import SELECTION_RULE, kept_dir, kept_model, kept_plan, kept_row, run, run_one
from .figures import figures
from .plan import plan, stages
from .resources import resources
from .standins import build as build_standins
from .tables import tables

NOTEBOOKS = ('05',)  # the notebooks this package serves

__all__ = ["Config", "load", "plan", "stages", "run_one", "run", "tables", "figures", "SECTION", "NOTEBOOKS", "resources",
           "build_standins", "SELECTION_RULE", "kept_row", "kept_dir", "kept_plan", "kept_model"]
