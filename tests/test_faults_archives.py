"""Unpacking an archive (the book's KaTeX, ``benchmarks gpu-notebooks record``) on every Python the README allows.

``TarFile.extractall(filter="data")`` arrived in Python 3.11.4; Debian 12's python3.11 is 3.11.2, where the book and
``record`` failed with ``TypeError``.  :func:`codeswitch.core.utils.extract_tar` uses the data filter where it exists
and checks each member itself where it does not: both paths are tested here, on every Python.
"""

from __future__ import annotations

import io
import tarfile

import pytest

from codeswitch.core.utils import extract_tar


def _archive(path, members):
    """``members``: ``(name, bytes)`` for a file, ``(name, None)`` for a folder, ``(name, "->target")`` for a symlink."""
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            if data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            elif isinstance(data, str):
                info.type, info.linkname = tarfile.SYMTYPE, data[2:]
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return path


@pytest.fixture(params=["data filter", "checked here"])
def python_path(request, monkeypatch):
    if request.param == "checked here":
        monkeypatch.delattr(tarfile, "data_filter", raising=False)  # as on Python 3.11.0-3.11.3
    elif not hasattr(tarfile, "data_filter"):
        pytest.skip("this Python has no tarfile.data_filter (older than 3.11.4)")
    return request.param


def test_an_archive_unpacks_whole_and_byte_identical(tmp_path, python_path):
    arc = _archive(tmp_path / "a.tar.gz", [("run", None), ("run/report.json", b'{"x": 1}'), ("run/logs/03.log", b"ok\n" * 1000)])
    dest = tmp_path / "out"
    dest.mkdir()
    with tarfile.open(arc) as tar:
        extract_tar(tar, dest, source=str(arc))
    assert (dest / "run" / "report.json").read_bytes() == b'{"x": 1}'
    assert (dest / "run" / "logs" / "03.log").read_bytes() == b"ok\n" * 1000


def test_only_the_chosen_members_are_unpacked(tmp_path, python_path):
    arc = _archive(tmp_path / "a.tar.gz", [("package/dist/katex.css", b"css"), ("package/README.md", b"readme")])
    dest = tmp_path / "out"
    dest.mkdir()
    with tarfile.open(arc) as tar:
        extract_tar(tar, dest, [m for m in tar.getmembers() if m.name.startswith("package/dist/")])
    assert (dest / "package" / "dist" / "katex.css").read_bytes() == b"css"
    assert not (dest / "package" / "README.md").exists()


@pytest.mark.parametrize("name", ["../escaped.txt", "/tmp/absolute-from-archive.txt", "run/../../escaped.txt"])
def test_a_member_outside_the_folder_is_refused_and_nothing_is_written(tmp_path, python_path, name):
    arc = _archive(tmp_path / "evil.tar.gz", [("run/first.txt", b"first"), (name, b"evil")])
    dest = tmp_path / "deep" / "out"
    dest.mkdir(parents=True)
    with tarfile.open(arc) as tar:
        try:
            extract_tar(tar, dest, source=str(arc))
            refused = None
        except Exception as exc:  # the data filter raises its own tarfile.FilterError
            refused = exc
    assert not (tmp_path / "deep" / "escaped.txt").exists() and not (tmp_path / "escaped.txt").exists()
    if python_path == "checked here":  # refused before anything is written, naming the archive and the member
        assert isinstance(refused, ValueError) and "evil.tar.gz" in str(refused) and name in str(refused)
        assert list(dest.iterdir()) == []
    elif name.startswith("/"):  # the data filter writes an absolute name inside the folder (its leading / dropped)
        assert refused is not None or (dest / name.lstrip("/")).read_bytes() == b"evil"
    else:
        assert refused is not None


def test_without_the_data_filter_a_link_is_refused(tmp_path, monkeypatch):
    monkeypatch.delattr(tarfile, "data_filter", raising=False)
    arc = _archive(tmp_path / "link.tar.gz", [("run/passwd", "->/etc/passwd")])
    dest = tmp_path / "out"
    dest.mkdir()
    with tarfile.open(arc) as tar, pytest.raises(ValueError, match="run/passwd.*not a regular file"):
        extract_tar(tar, dest, source=str(arc))
    assert list(dest.iterdir()) == []
