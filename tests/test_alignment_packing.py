"""The packed alignment step (``alignment.packing``, issue 24) equals the padded one: the same loss and gradients.

Both sides of a batch go through one forward per encoder (f, and its frozen copy
f0), packed into ``R × width`` tokens with block-diagonal attention and
per-sentence positions (``common.fastpath.pack_features``); token vectors are read
back at each sentence's offsets.  In fp32, without dropout, the loss and every
gradient equal the padded step's up to float summation order.
"""

from __future__ import annotations

import pytest
import torch

from .test_perf_guards_alignment import spec, tiny  # noqa: F401  (fixtures)


def _loss_and_grads(tiny, spec, data, *, packed: bool, mode: str, objective: str):
    import dataclasses

    from transformers import AutoModel

    from codeswitch.alignment.train import Aligner, PairTokens, _batch_loss

    path, tok = tiny
    args = dataclasses.replace(spec, mode=mode, objective=objective)
    torch.manual_seed(0)
    aligner = Aligner(AutoModel.from_pretrained(path, attn_implementation="sdpa"), mode)
    aligner.freeze_reference()
    with torch.no_grad():  # f moves away from f0, so the regulariser has a gradient
        for p in (aligner.head if mode == "linear_head" else aligner.encoder).parameters():
            p.add_(0.01 * torch.randn_like(p))
    aligner.eval()  # no dropout: the two layouts compute the same function
    tokens = (PairTokens.packed(tok, data, args.max_length, batch_size=8, seed=0) if packed
              else PairTokens(tok, data, args.max_length))
    terms = _batch_loss(aligner, data, list(range(8)), tokens, args, "cpu")
    terms["total"].backward()
    grads = {n: p.grad.clone() for n, p in aligner.named_parameters() if p.grad is not None}
    return {k: v.detach() for k, v in terms.items()}, grads


@pytest.mark.parametrize("mode,objective", [("all_layers", "sentence"), ("all_layers", "word"), ("linear_head", "sentence")])
@pytest.mark.parametrize("source", ["synthetic", "shared"])
def test_packed_step_equals_padded_step(tiny, spec, mode, objective, source, request):  # noqa: F811
    from codeswitch.alignment.data import load_parallel

    if source == "shared":  # the real IITB pairs and their awesome-align alignments
        data = load_parallel(str(request.getfixturevalue("shared_data") / "cfilt_en_hi"), "validation", limit=8)
    else:
        data = load_parallel("synthetic", "train", limit=8)
    got, got_g = _loss_and_grads(tiny, spec, data, packed=True, mode=mode, objective=objective)
    ref, ref_g = _loss_and_grads(tiny, spec, data, packed=False, mode=mode, objective=objective)
    assert got.keys() == ref.keys()
    for k in ref:
        torch.testing.assert_close(got[k], ref[k], rtol=1e-5, atol=1e-6, msg=k)
    assert got_g.keys() == ref_g.keys() and len(ref_g) > 0
    scale = max(g.abs().max() for g in ref_g.values())
    for n in ref_g:
        assert (got_g[n] - ref_g[n]).norm() <= 1e-4 * torch.cat([g.flatten() for g in ref_g.values()]).norm(), n  # relative to the whole gradient's norm (issue 41): reordered fp32 sums stay near 1e-5 of it on any CPU, a packing bug moves it by O(1e-1)


def test_packing_is_a_setting_of_the_section():
    """``alignment.packing``: on in the paper profiles, off in smoke (its tables stay as they were); a run's key
    carries it only when on."""
    from codeswitch import alignment as A
    from codeswitch.core.profiles import load_profile

    for name, on in (("smoke", False), ("paper-ci", True)):
        aligns, _, _ = A.stages(load_profile(name))
        assert {s.packing for s in aligns} == {True if on else None}, name


def test_gluecos_packing_is_a_setting_of_the_section():
    """``alignment.gluecos_packing`` (GLUECoS fine-tuning): on in the paper profiles, off in smoke; a fine-tune's key
    carries it only when on (the smoke keys are those of earlier runs)."""
    from codeswitch import alignment as A
    from codeswitch.core.profiles import load_profile

    for name, on in (("smoke", False), ("paper", True), ("paper-ci", True)):
        _, fine, _ = A.stages(load_profile(name))
        assert {s.packing for s in fine} == {True if on else None}, name
        assert all(("packing" in s.key()) is on for s in fine), name
