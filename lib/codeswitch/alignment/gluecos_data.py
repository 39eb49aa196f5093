"""GLUECoS Hindi–English tasks (Khanuja et al. 2020) read from a local folder in GLUECoS's processed layout.

The alignment paper evaluates on three of them (§3.1.1)::

    <gluecos_dir>/Sentiment_EN_HI/Devanagari/{train,validation[,test]}.txt   text<TAB>label
    <gluecos_dir>/NER_EN_HI/Romanized/{train,validation[,test]}.txt          CoNLL: token<TAB>tag, blank line between sentences
    <gluecos_dir>/QA_EN_HI/{train-v2.0.json,dev-v2.0.json}                   SQuAD v2 JSON

``<gluecos_dir>`` is GLUECoS's ``Data/Processed_Data`` after its download and
preprocessing scripts (the data cannot be redistributed, so the project ships only
tiny look-alikes for the smoke profile, in ``codeswitch/assets/alignment/gluecos``).
The task sub-folders are settings: the sentiment task can equally point at
``Sentiment_EN_HI/Romanized`` or at a SAIL 2017 folder of the same layout.

GLUECoS ships its test splits without labels: such files read with ``None`` labels
and are not scored.  Sentiment files are read by :mod:`codeswitch.common.sentiment`.
Bad input raises :class:`GluecosFormatError` naming the file, the line (or question
id) and the field.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Literal

from ..common.textio import read_text
from ..core.hub import MissingResourceError
from ..common.sentiment import LABELS as SENTIMENT_LABELS
from ..common.sentiment import load_sentiment_splits

__all__ = [
    "GluecosFormatError",
    "TaggedSentence",
    "QAExample",
    "TaskSpec",
    "TASKS",
    "read_conll",
    "read_squad_v2",
    "load_task",
    "SENTIMENT_LABELS",
]


class GluecosFormatError(ValueError):
    """A GLUECoS file that does not follow its format."""


@dataclass(frozen=True)
class TaggedSentence:
    words: tuple[str, ...]
    tags: tuple[str, ...] | None  # None: an unlabelled (test) file


@dataclass(frozen=True)
class QAExample:
    id: str
    question: str
    context: str
    answers: tuple[tuple[str, int], ...]  # (text, character start); empty when unanswerable
    is_impossible: bool


def read_conll(path: str | Path) -> list[TaggedSentence]:
    """CoNLL ``token<TAB>tag`` lines, sentences separated by blank lines (``token`` alone: unlabelled)."""
    path = Path(path)
    sentences: list[TaggedSentence] = []
    words: list[str] = []
    tags: list[str | None] = []
    first_line = 0

    def flush():
        if not words:
            return
        unlabelled = [t is None for t in tags]
        if any(unlabelled) and not all(unlabelled):
            raise GluecosFormatError(f"{path}, sentence starting at line {first_line}, field 'tag': some tokens have a tag, some not")
        sentences.append(TaggedSentence(tuple(words), None if all(unlabelled) else tuple(tags)))  # type: ignore[arg-type]
        words.clear()
        tags.clear()

    with io.StringIO(read_text(path), newline="") as fh:  # a bad byte names the file
        for lineno, line in enumerate(fh, 1):
            line = line.rstrip("\r\n")
            if not line.strip():
                flush()
                continue
            if not words:
                first_line = lineno
            fields = line.split("\t")
            if len(fields) > 2:
                raise GluecosFormatError(f"{path}, line {lineno}: expected 'token<TAB>tag', found {len(fields)} tab-separated fields")
            token = fields[0].strip()
            if not token:
                raise GluecosFormatError(f"{path}, line {lineno}, field 'token': empty")
            tag = fields[1].strip() if len(fields) == 2 else None
            if tag == "":
                raise GluecosFormatError(f"{path}, line {lineno}, field 'tag': empty")
            words.append(token)
            tags.append(tag)
    flush()
    if not sentences:
        raise GluecosFormatError(f"{path}: no sentences")
    return sentences


def read_squad_v2(path: str | Path) -> list[QAExample]:
    """A SQuAD v2 JSON file (``data[].paragraphs[].qas[]``); checks every answer span against its context."""
    path = Path(path)
    try:
        doc = json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise GluecosFormatError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), list):
        raise GluecosFormatError(f"{path}: expected a SQuAD object with a 'data' list")
    out: list[QAExample] = []
    seen: set[str] = set()
    for a, article in enumerate(doc["data"]):
        for p, para in enumerate(article.get("paragraphs", [])):
            context = para.get("context")
            if not isinstance(context, str) or not context.strip():
                raise GluecosFormatError(f"{path}, data[{a}].paragraphs[{p}], field 'context': missing or empty")
            for q in para.get("qas", []):
                qid = str(q.get("id", ""))
                where = f"{path}, question id {qid!r} (data[{a}].paragraphs[{p}])"
                if not qid:
                    raise GluecosFormatError(f"{path}, data[{a}].paragraphs[{p}]: a question without 'id'")
                if qid in seen:
                    raise GluecosFormatError(f"{where}, field 'id': duplicate")
                seen.add(qid)
                question = q.get("question")
                if not isinstance(question, str) or not question.strip():
                    raise GluecosFormatError(f"{where}, field 'question': missing or empty")
                answers = []
                for ans in q.get("answers", []):
                    text, start = ans.get("text"), ans.get("answer_start")
                    if not isinstance(text, str) or not isinstance(start, int):
                        raise GluecosFormatError(f"{where}, field 'answers': each answer needs 'text' (str) and 'answer_start' (int)")
                    if context[start : start + len(text)] != text:
                        raise GluecosFormatError(
                            f"{where}, field 'answers': {text!r} is not at character {start} of the context "
                            f"(found {context[start : start + len(text)]!r})"
                        )
                    answers.append((text, start))
                impossible = bool(q.get("is_impossible", not answers))
                if not impossible and not answers:
                    raise GluecosFormatError(f"{where}, field 'answers': an answerable question without answers")
                out.append(QAExample(qid, question.strip(), context, tuple(dict.fromkeys(answers)), impossible))
    if not out:
        raise GluecosFormatError(f"{path}: no questions")
    return out


@dataclass(frozen=True)
class TaskSpec:
    """One GLUECoS task: where its splits live and what kind of model reads it."""

    kind: Literal["sequence", "token", "span"]
    default_subdir: str
    files: dict[str, tuple[str, ...]]  # split -> candidate file names (first found wins)
    metric: str  # what the score is, for tables
    loader: Callable[[Path, "TaskSpec"], dict]


def _load_sentiment(folder: Path, spec: TaskSpec) -> dict:
    splits = load_sentiment_splits(folder, "sail")
    return {k: [(ex.text, ex.label) for ex in v] for k, v in splits.items()}


def _load_files(reader) -> Callable[[Path, TaskSpec], dict]:
    def load(folder: Path, spec: TaskSpec) -> dict:
        out = {}
        for split, names in spec.files.items():
            found = next((folder / n for n in names if (folder / n).is_file()), None)
            if found is None:
                if split == "test":
                    continue
                raise MissingResourceError(f"GLUECoS: {folder} has no {split} file (looked for {', '.join(names)})")
            out[split] = reader(found)
        return out

    return load


TASKS: dict[str, TaskSpec] = {
    "sentiment": TaskSpec(
        kind="sequence",
        default_subdir="Sentiment_EN_HI/Devanagari",
        files={"train": ("train.txt",), "validation": ("validation.txt",), "test": ("test.txt",)},
        metric="weighted F1",
        loader=_load_sentiment,
    ),
    "ner": TaskSpec(
        kind="token",
        default_subdir="NER_EN_HI/Romanized",
        files={"train": ("train.txt",), "validation": ("validation.txt",), "test": ("test.txt",)},
        metric="entity F1 (seqeval)",
        loader=_load_files(read_conll),
    ),
    "qa": TaskSpec(
        kind="span",
        default_subdir="QA_EN_HI",
        files={"train": ("train-v2.0.json",), "validation": ("dev-v2.0.json",)},
        metric="SQuAD v2 F1",
        loader=_load_files(read_squad_v2),
    ),
}


def load_task(gluecos_dir: str | Path, task: str, subdir: str | None = None) -> dict:
    """``{"train", "validation"[, "test"]}`` of one task; examples are ``(text, label_id)`` pairs
    (sentiment), :class:`TaggedSentence` (NER) or :class:`QAExample` (QA).

    ``subdir`` (default: the task's GLUECoS sub-folder) may be absolute, to read a
    task from anywhere (e.g. a SAIL 2017 folder).
    """
    if task not in TASKS:
        raise ValueError(f"unknown GLUECoS task {task!r}; known: {sorted(TASKS)}")
    spec = TASKS[task]
    folder = Path(gluecos_dir).expanduser() / (subdir or spec.default_subdir)
    if not folder.is_dir():
        raise MissingResourceError(
            f"GLUECoS {task}: {folder} does not exist.  Download and preprocess GLUECoS "
            f"(https://github.com/microsoft/GLUECoS, Data/Processed_Data) and set alignment.gluecos_dir "
            f"(or alignment.task_subdirs.{task}) to it."
        )
    return spec.loader(folder, spec)
