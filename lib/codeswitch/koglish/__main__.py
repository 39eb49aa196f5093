"""``python -m codeswitch.koglish corpus``: regenerate ``assets/corpus/koglish.txt``, the smoke tokenizers'
corpus (:func:`codeswitch.koglish.synthetic.corpus_text`), after changing the mini Koglish's grammar or
glossary (a test checks the file is current)."""

from __future__ import annotations

import argparse

from ..core.atomic import atomic_write_text
from .synthetic import CORPUS, corpus_text


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m codeswitch.koglish", description=__doc__.split(":", 1)[1].strip())
    parser.add_argument("command", choices=["corpus"], help="corpus: rewrite assets/corpus/koglish.txt")
    parser.parse_args(argv)
    atomic_write_text(CORPUS, corpus_text())
    print(f"wrote {CORPUS} ({CORPUS.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
