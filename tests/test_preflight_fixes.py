"""Every ``--check`` fix line works when pasted (issue 42, item 4).

For each resource the paper profile misses, the fix lines ``--check`` prints are followed as a user would: the
``hf download … --local-dir DIR`` / ``curl … -o FILE`` line (or a local copy in the released layout) makes a fake
copy of what it names, with the files the line names or the resource needs, under a temporary folder standing for
``/data``; then the printed ``--set SETTING=VALUE`` is applied and the check runs again: each such resource is now
present.  Then the MUSE setting the fix line gives resolves, for every language, to the same file in the check
(``muse_input``) and in the run (``muse_path``).
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from codeswitch.core.profiles import load_profile
from codeswitch.pipeline import preflight

from .test_preflight import no_network  # noqa: F401 - the fixture

COMMAND = "./reproduce.sh --profile paper"


def _fake(folder: Path, patterns) -> None:
    """A folder holding one file per pattern (``a|b``: the first; ``*``: a name that matches)."""
    folder.mkdir(parents=True, exist_ok=True)
    for pat in patterns or ("placeholder.txt",):
        f = folder / pat.split("|")[0].replace("**/", "").replace("*", "x")
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("stand-in\n")


def _follow(status, lines: list[str], data: Path) -> tuple[str, str] | None:
    """Do what ``lines`` say for ``status`` under ``data`` (for ``/data``); return the ``--set`` it prints, localised."""
    r = status.resource
    setting = None
    for line in lines:
        words = shlex.split(line, comments=True)
        here = [w.replace("/data/", f"{data}/").replace("/path/to/copy", f"{data}/copy/{r.setting}") for w in words]
        if words[:2] == ["hf", "download"]:
            local = Path(here[here.index("--local-dir") + 1])
            includes = [here[i + 1] for i, w in enumerate(here) if w == "--include"]
            _fake(local, includes or r.files)
        elif words[:1] == ["curl"]:
            out = Path(here[here.index("-o") + 1])
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text("the 1\n")
        elif words[:1] == ["./reproduce.sh"] and "--set" in words:
            key, value = here[len(here) - 1 - here[::-1].index("--set") + 1].split("=", 1)
            if "/copy/" in value:  # a local copy in the released layout: the files the resource needs
                _fake(Path(value), r.files)
            setting = (key, value)
    return setting


def test_every_set_fix_line_makes_its_resource_present(no_network, tmp_path):
    statuses = preflight.check(load_profile("paper"))
    missing = [s for s in statuses if not s.present]
    assert len(missing) >= 40
    overrides: dict[str, str] = {}
    followed = set()
    for s in missing:
        lines = preflight._fix(s, COMMAND)
        assert lines, s
        got = _follow(s, lines, tmp_path / "data")
        if got is None:
            assert s.resource.kind in ("package", "credential") or s.resource.probe is not None, (s.resource.setting, lines)
            continue
        key, value = got
        assert overrides.get(key, value) == value, f"two fix lines set {key} differently: {overrides[key]} and {value}"
        overrides[key] = value
        followed.add(s.resource.setting)
    assert "contrastivemix.muse" in followed and "alignment.lexicon_source" in followed
    after = preflight.check(load_profile("paper", overrides=overrides))
    still = [(s.resource.setting, s.resource.ref, s.where, s.missing_files) for s in after
             if not s.present and s.resource.setting in followed]
    assert not still, f"still missing after pasting their fix lines: {still}"
    # the check and the run read the MUSE setting the same way: one file per language, the one the fix put there
    from codeswitch.contrastivemix.codemix import muse_path
    from codeswitch.contrastivemix.data import muse_input

    muse = overrides["contrastivemix.muse"]
    langs = sorted({s.resource.ref.rsplit("en-", 1)[-1][:-4] for s in missing if s.resource.setting == "contrastivemix.muse"})
    assert len(langs) >= 10, langs
    for lang in langs:
        read = muse_path(muse, lang, download_dir=tmp_path / "dl")
        assert read == Path(muse_input(muse, lang)) and read.is_file() and read.name == f"en-{lang}.txt", (lang, read)


def test_muse_set_to_a_file_is_read_alike_by_the_check_and_the_run(no_network, tmp_path):
    """``--set contrastivemix.muse=<one file>``: the check says ok; the run must then read that file (or the check
    must refuse it), never a path below it."""
    from codeswitch.contrastivemix.codemix import muse_path
    from codeswitch.contrastivemix.data import muse_input

    f = tmp_path / "en-ar.txt"
    f.write_text("the 1\n")
    prof = load_profile("paper", overrides={"contrastivemix.muse": str(f)})
    ok = all(s.present for s in preflight.check(prof) if s.resource.setting == "contrastivemix.muse")
    if ok:
        assert muse_path(str(f), "ar", download_dir=tmp_path / "dl") == Path(muse_input(str(f), "ar"))


def test_muse_one_file_serves_its_language_and_is_refused_for_another(tmp_path):
    """One reading of the setting (contrastivemix.muse_setting.muse_file): a .txt named en-<lang>.txt is read for that
    language; for another the run refuses it naming the file, never reading a path below it."""
    from codeswitch.contrastivemix.muse_setting import muse_file
    from codeswitch.core.hub import MissingResourceError

    f = tmp_path / "en-ar.txt"
    f.write_text("the 1\n")
    assert muse_file(str(f), "ar") == str(f)
    assert muse_file(str(tmp_path), "ko") == str(tmp_path / "en-ko.txt")
    assert muse_file(str(tmp_path / "en-{lang}.txt"), "ko") == str(tmp_path / "en-ko.txt")
    with pytest.raises(MissingResourceError, match="names one file.*en-ko.txt"):
        muse_file(str(f), "ko")
