"""Fault injection, round three (issue 41 item 6): an input edited under an unchanged size and time stamp.

Content hashing is the default for every file under ``identity.hash_below()`` (64 MiB); the size-and-time shortcut is
kept for large local copies only, and said once (a ``TrustedStatNotice`` naming the file).  On the code before issue 41
the first test fails: the smoke profile (``verify_hashes`` unset) trusted every stat entry and kept the old key.
"""

from __future__ import annotations

import warnings

import pytest

from codeswitch.core import identity, runs
from codeswitch.core.checkpoints import CheckpointWarning, checkpoint_ok

from .helpers import swapped_checkpoint, touch_r_edit


@pytest.fixture(autouse=True)
def _digests(tmp_path, monkeypatch):
    monkeypatch.setenv("CODESWITCH_DIGESTS", str(tmp_path / "_digests" / "sha256.json"))
    for var in (identity.VERIFY_VAR, identity.PROFILE_VERIFY_VAR, "CODESWITCH_HASH_BELOW", runs.WARNINGS_FILE_VAR):
        monkeypatch.delenv(var, raising=False)
    memos = (identity._MEMO, identity._VERIFIED, getattr(identity, "_TRUSTED_SAID", set()))
    for memo in memos:
        memo.clear()
    yield
    for memo in memos:
        memo.clear()




def _later_process() -> None:
    identity._MEMO.clear()  # the digest cache is read again from its file
    identity._VERIFIED.clear()


def test_a_small_input_edited_under_its_old_size_and_time_stamp_gets_a_new_key_by_default(tmp_path):
    assert identity.verify_age() is None  # the smoke profile's setting: nothing asks for verification
    f = tmp_path / "labels.csv"
    f.write_bytes(b"x,y\n1,2\n")
    before = identity.content_id(f)
    touch_r_edit(f, b"x,y\n1,3\n")
    _later_process()
    with pytest.warns(identity.StaleDigestWarning, match="labels.csv: its content changed although its size and mtime"):
        after = identity.content_id(f)
    assert after != before
    # the same file, unchanged, in a later process: the same id (hashed again, found equal: no warning)
    _later_process()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert identity.content_id(f) == after


def test_a_swapped_small_weight_file_fails_its_checkpoint_by_default(tmp_path):
    folder = swapped_checkpoint(tmp_path)
    _later_process()
    with pytest.warns(CheckpointWarning, match=r"model\.safetensors changed"):
        assert not checkpoint_ok(folder)


def test_a_large_local_copy_keeps_the_stat_shortcut_and_says_so_once(tmp_path, monkeypatch):
    monkeypatch.setenv(identity.HASH_BELOW_VAR, "32")  # a 64-byte file stands for a large local copy
    f = tmp_path / "corpus.bin"
    f.write_bytes(b"\x01" * 64)
    before = identity.content_id(f)
    touch_r_edit(f, b"\x02" * 64)
    _later_process()
    with pytest.warns(identity.TrustedStatNotice, match=r"corpus\.bin: a large local copy .* --verify re-hashes it") as got:
        assert identity.content_id(f) == before  # trusted: the documented blind spot, for large files only
        assert identity.content_id(f) == before
    assert len([w for w in got if issubclass(w.category, identity.TrustedStatNotice)]) == 1  # said once
    _later_process()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per run: not said again by this process
        assert identity.content_id(f) == before
    # --verify (verify_hashes: always) re-hashes it, and the threshold is checked
    _later_process()
    monkeypatch.setenv(identity.VERIFY_VAR, "always")
    with pytest.warns(identity.StaleDigestWarning):
        assert identity.content_id(f) != before
    monkeypatch.setenv(identity.HASH_BELOW_VAR, "lots")
    with pytest.raises(ValueError, match="CODESWITCH_HASH_BELOW: 'lots' is not a number of bytes"):
        identity.hash_below()


def test_publication_hashes_every_file_whatever_its_size(tmp_path, monkeypatch):
    monkeypatch.setenv(identity.HASH_BELOW_VAR, "0")  # every file "large"
    f = tmp_path / "model.safetensors"
    f.write_bytes(b"\x01" * 64)
    before = identity.file_sha256(f)
    touch_r_edit(f, b"\x02" * 64)
    _later_process()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", identity.TrustedStatNotice)
        assert identity.file_sha256(f) == before  # trusted
    with pytest.warns(identity.StaleDigestWarning):
        assert identity.file_sha256s([f], fresh=True) != [before]
