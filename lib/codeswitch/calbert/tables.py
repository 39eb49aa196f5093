"""CalBERT Tables 4 and 10: the sentiment data sets' split sizes, as read here, beside the paper's.

Table 4 lists SAIL 2017's splits (§7.1), Table 10 the IITP product reviews' (§7.2).  The sizes come from the files
the fine-tuning reads (:func:`codeswitch.calbert.experiment.task_splits`), never typed; the paper's from
:mod:`codeswitch.core.reported`.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..core import claims
from ..core.profiles import Profile

COLUMN = "Number of examples"
TASK_OF = {"table4": "sail", "table10": "iitp"}
SECTION = {"table4": "§7.1 SAIL 2017", "table10": "§7.2 IndicGLUE Product Reviews"}


def split_table(profile: Profile, table: str) -> dict[str, Path]:
    """Write ``calbert_table4`` (SAIL 2017) or ``calbert_table10`` (IITP): the split sizes read here beside the paper's."""
    from ..core.report import comparison, save_table
    from .experiment import SPLIT_ROWS, TASKS, _split_note, task_splits

    task = TASK_OF[table]
    seen = task_splits(profile, task)
    measured = pd.DataFrame([dict(row=label, column=COLUMN, mean=float(len(seen[split])), std=float("nan"), n=1)
                             for split, label in SPLIT_ROWS.items() if split in seen])
    wide, long = comparison(measured, paper="calbert", table=table, digits=0, row_order=list(measured["row"]), column_order=[COLUMN])
    return save_table(wide, f"calbert_{table}", profile, caption=f"{TASKS[task]}: examples per split (CalBERT {table.replace('table', 'Table ')})",
                      long=long, notes=[_split_note(profile, task)], claim=size_claim(long, profile, table))


def size_claim(long: pd.DataFrame, profile: Profile | None, table: str) -> claims.Claim:
    """CalBERT Table 4 / Table 10 (calbert.txt): the data set's splits have the sizes the paper prints (to the row)."""
    task = TASK_OF[table]
    return claims.within(long, f"the {'SAIL 2017' if task == 'sail' else 'IITP product reviews'} splits read here have the "
                         f"sizes of the paper's {table.replace('table', 'Table ')}", tolerance=0.5,
                         source=f"CalBERT {SECTION[table]}, {table.replace('table', 'Table ')} (calbert.txt)")


for _t in TASK_OF:
    claims.register(f"calbert_{_t}", paper="calbert", table=_t)(lambda long, profile=None, t=_t: size_claim(long, profile, t))
