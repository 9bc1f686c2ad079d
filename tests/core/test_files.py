"""Writes that never lose data: atomic, compare-and-swap, modes kept, odd files refused."""

from __future__ import annotations

import os
import stat

import pytest

from projector.core import files


def test_write_replaces_atomically_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "c.json"
    path.write_text("old")
    path.chmod(0o640)
    files.write_text(path, "new", expected="old")
    assert path.read_text() == "new"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert os.listdir(tmp_path) == ["c.json"]


def test_a_file_changed_since_it_was_read_is_not_replaced(tmp_path):
    path = tmp_path / "c.json"
    path.write_text("the client wrote this meanwhile")
    with pytest.raises(files.ChangedMeanwhile):
        files.write_text(path, "ours", expected="what we read")
    assert path.read_text() == "the client wrote this meanwhile"
    assert os.listdir(tmp_path) == ["c.json"]
    with pytest.raises(files.ChangedMeanwhile):
        files.write_text(tmp_path / "new.json", "ours", expected="it existed when we read")


def test_a_read_only_file_is_left_alone_even_for_root(tmp_path):
    path = tmp_path / "c.json"
    path.write_text("{}")
    path.chmod(0o444)
    with pytest.raises(OSError, match="read-only"):
        files.write_text(path, "new")
    assert path.read_text() == "{}"


def test_odd_files_are_refused_when_read(tmp_path):
    with pytest.raises(OSError, match="folder"):
        files.read_text(tmp_path)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        files.read_text(fifo)  # would block forever if it were opened


def test_symlink_is_written_through_and_stays_a_link(tmp_path):
    real = tmp_path / "dotfiles" / "mcp.json"
    real.parent.mkdir()
    real.write_text("{}")
    link = tmp_path / "mcp.json"
    link.symlink_to(real)
    files.write_text(link, "new", expected="{}")
    assert link.is_symlink() and real.read_text() == "new"


def test_remove_checks_too(tmp_path):
    path = tmp_path / "c.json"
    path.write_text("changed")
    with pytest.raises(files.ChangedMeanwhile):
        files.remove(path, expected="original")
    files.remove(path, expected="changed")
    assert not path.exists()


def test_the_lock_says_busy(tmp_path):
    lock = tmp_path / "sync.lock"
    with files.exclusive(lock, 1):
        with pytest.raises(files.Busy):
            with files.exclusive(lock, 0.1):
                pass


def test_a_client_write_between_check_and_swap_is_swapped_back(tmp_path, monkeypatch):
    path = tmp_path / "claude.json"
    path.write_text("read by projector")
    real_exchange = files._exchange
    calls = []

    def client_writes_first(first, second):
        if not calls:  # the client's own atomic rewrite lands in the window
            (tmp_path / "client-tmp").write_text("written by the client")
            os.replace(tmp_path / "client-tmp", path)
        calls.append(first)
        return real_exchange(first, second)

    monkeypatch.setattr(files, "_exchange", client_writes_first)
    with pytest.raises(files.ChangedMeanwhile):
        files.write_text(path, "ours", expected="read by projector")
    assert len(calls) == 2, "swapped in, then swapped back"
    assert path.read_text() == "written by the client"
    assert os.listdir(tmp_path) == ["claude.json"]


@pytest.mark.parametrize(("name", "ours", "not_ours"), [
    ("c.json", ".c.json.abc123.projector-tmp", ".other.json.abc.projector-tmp"),
    ("m[1].json", ".m[1].json.abc123.projector-tmp", ".m1.json.abc123.projector-tmp"),  # no glob: [1] is no character class
])
def test_a_killed_syncs_temporary_file_is_cleaned_up(tmp_path, name, ours, not_ours):
    path = tmp_path / name
    path.write_text("x")
    (tmp_path / ours).write_text("half")
    (tmp_path / not_ours).write_text("not ours to judge")
    files.write_text(path, "y", expected="x", locked=True)
    assert sorted(os.listdir(tmp_path)) == sorted([not_ours, name])


def test_without_the_lock_only_old_temporary_files_are_taken_for_leftovers(tmp_path):
    path = tmp_path / "state.json"
    young, old = tmp_path / ".state.json.young.projector-tmp", tmp_path / ".state.json.old.projector-tmp"
    young.write_text("another writer's, in progress")
    old.write_text("a killed writer's")
    os.utime(old, (0, 0))
    files.write_text(path, "y")
    assert sorted(os.listdir(tmp_path)) == [young.name, "state.json"]


def test_the_owner_is_kept_when_root_writes_someone_elses_file(tmp_path):
    if os.getuid() != 0:
        pytest.skip("only root can give a file to another user")
    path = tmp_path / "c.json"
    path.write_text("old")
    os.chown(path, 1234, 2345)
    files.write_text(path, "new", expected="old")
    assert (path.stat().st_uid, path.stat().st_gid) == (1234, 2345)


@pytest.mark.parametrize(("in_target", "kept"), [("ours", "client-1"), ("client-2", "client-2")])
def test_swapping_back_keeps_the_clients_newest_write(tmp_path, in_target, kept):
    """Our exchange displaced the client's write client-1; the swap-back restores it, unless the
    client wrote client-2 after our exchange: then client-2, its newest, stays."""
    target, temporary = tmp_path / "c.json", tmp_path / ".c.json.x.projector-tmp"
    target.write_text(in_target)
    temporary.write_text("client-1")
    files._swap_back(str(temporary), target, b"ours")
    assert target.read_text() == kept
