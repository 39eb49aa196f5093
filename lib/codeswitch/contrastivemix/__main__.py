"""The command line of ContrastiveMix: ``[accelerate launch -m] python -m codeswitch.contrastivemix --profile paper``
trains every model of a profile's plan (:func:`train_all`), one process per GPU under ``accelerate launch``;
notebook 05 then finds the checkpoints and only evaluates.
"""

from __future__ import annotations

from typing import Sequence

from ..core.checkpoints import checkpoint_ok
from ..core.profiles import Profile
from ..core.runs import RunCache
from .config import TrainRun
from .experiment import run_one
from .inputs import checkpoint_dir
from .plan import KINDS, plan, root


def train_all(profile: Profile) -> None:
    """Train and save every model of the plan, without evaluating: the part worth spreading over GPUs.

    ``accelerate launch -m codeswitch.contrastivemix --profile paper``
    starts one process per GPU; every process encodes its slice of each global
    batch and the passages are gathered across devices (see
    :mod:`codeswitch.contrastivemix.train`).  Checkpoints are always saved; the
    notebook (``./reproduce.sh --profile paper --only 05``) then finds them and only
    evaluates.  Models already trained or fully evaluated are skipped.
    """
    from accelerate import PartialState

    from ..core.progress import progress

    main = PartialState().is_main_process
    cache = RunCache(root(profile) / KINDS[TrainRun])
    for spec in progress([s for s in plan(profile) if isinstance(s, TrainRun)], desc="contrastivemix training", unit="model",
                         disable=not main):
        if spec.key() in cache or checkpoint_ok(checkpoint_dir(profile, spec), what="retrieval checkpoint"):
            continue
        stats = run_one(spec, profile)  # trains and saves it (checkpoints/<key>)
        if main:
            cache.put(spec.key(), stats)


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    from ..core.deltas import parse_overrides
    from ..core.profiles import load_profile

    parser = argparse.ArgumentParser(
        prog="python -m codeswitch.contrastivemix",
        description="Train every ContrastiveMix model of a profile (run under `accelerate launch` for several GPUs); "
        "notebook 05 then evaluates them.",
    )
    parser.add_argument("--profile", default="paper")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    train_all(load_profile(args.profile, parse_overrides(args.overrides)))
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
