"""Notebook 01 §1-2: the pipeline shown sentence by sentence.

* :func:`walkthrough` — sentences through parse -> NP walk -> translation -> switch,
  one per kind of outcome (also the examples Figure 1 draws from);
* :func:`np_agreement` — our NP choice against the ``source_np0`` column the data carries.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from . import data as K
from .config import Config
from .construct import Selection
from .experiment import make_switcher, raw_task
from .synthetic import TREES_FILE
from ..core.profiles import Profile

__all__ = ["walkthrough", "np_agreement", "gold_trees"]


def _describe(sel: Selection) -> str:
    marks = {"selected": "✓", "pronoun": "✗ pronoun", "too_short": "✗ 1 token", "whole_sentence": "✗ whole sentence"}
    if not sel.trace:
        return {"sentence_is_np": "(the sentence is one NP)", "no_np": "(no NP node)"}.get(sel.reason or "", f"({sel.reason})")
    return " → ".join(f"[{c.text}] {marks[c.verdict]}" for c in sel.trace)


def _story(o) -> tuple:
    """What an example teaches: switched (after which rejections) or excluded (why)."""
    if o.ok:
        return ("switched", tuple(sorted({c.verdict for c in o.selection.trace if c.verdict != "selected"})))
    return ("excluded", o.reason)


def _one_per_story(outcomes: list, n: int) -> list:
    """The first outcome of each story, in order of appearance, filled up with the first others; at most ``n``."""
    chosen, seen = [], set()
    for o in outcomes:
        if _story(o) not in seen:
            seen.add(_story(o))
            chosen.append(o)
    for o in outcomes:  # fill up with the first sentences when there are few stories
        if len(chosen) >= n:
            break
        if o not in chosen:
            chosen.append(o)
    return chosen[:n]


def walkthrough(profile: Profile, c: Config, pool: int = 200) -> tuple[pd.DataFrame, list]:
    """A few raw sentences of ``koglish.walkthrough_task`` through every step, one per kind of outcome.

    From the first ``pool`` raw sentences, the first example of each *story*
    (switched at once; switched after rejecting a pronoun or a one-token NP;
    excluded for each reason) is shown, in order of appearance, up to
    ``koglish.walkthrough_n`` rows.  Returns a table (sentence, the NP walk, NP₀,
    translation, result) and the outcomes with their trees, for Figure 1
    (:func:`codeswitch.koglish.figures.figure1`).
    """
    raw, trees = raw_task(c, c.walkthrough_task)
    raw = raw.head(max(pool, c.walkthrough_n))
    col = "sentence" if "sentence" in raw.columns else "sentence1"
    sw = make_switcher(profile, c, trees)
    chosen = _one_per_story(sw.switch_many(raw[col].tolist()), c.walkthrough_n)
    parsed = sw.parser.parse_many([o.sentence for o in chosen])
    rows = []
    for o in chosen:
        rows.append(
            {
                "sentence": o.sentence,
                "NP walk (top-down)": _describe(o.selection) if o.selection else "",
                "NP₀": o.source_np0 or "",
                "translation": o.target_np0 or "",
                "code-switched / excluded": o.cross if o.ok else f"excluded: {o.reason}" + (f" ({o.detail})" if o.detail else ""),
            }
        )
    return pd.DataFrame(rows), list(zip(chosen, parsed))


def np_agreement(profile: Profile, c: Config, source: str, task: str = "cola", n: int = 200) -> pd.DataFrame:
    """How often our NP rule picks the released ``source_np0`` on the released English sentences.

    Uses this profile's parser (gold trees for the synthetic data, benepar for
    the released data); one row per split with the agreement rate.
    """
    trees = gold_trees(source) if c.parser == "ptb" else None
    sw = make_switcher(profile, c, trees)
    rows = []
    for split in K.GLUE_SPLITS:
        df = K.load_glue(source, task, split).head(n)
        s_col, np_col = ("sentence", "source_np0") if "sentence" in df.columns else ("sentence1", "source1_np0")
        sel = sw.select_many(df[s_col].tolist())
        same = [s.np == ref for s, ref in zip(sel, df[np_col])]
        rows.append({"task": task, "split": split, "sentences": len(df), "same NP as released": sum(same), "agreement %": 100.0 * sum(same) / max(len(df), 1)})
    return pd.DataFrame(rows)


def gold_trees(source: str) -> dict[str, str]:
    """The gold PTB trees a build of this project wrote next to its data (``{sentence: bracket string}``)."""
    p = Path(source) / TREES_FILE
    if not p.is_file():
        raise ValueError(f"{source}: no gold trees ({TREES_FILE}); the 'ptb' parser only works on data this project built")
    return json.loads(p.read_text(encoding="utf-8"))
