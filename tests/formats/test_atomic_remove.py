"""_atomic.remove: whatever is at a name goes (a file, a folder, a link, never what a link points to)."""

from __future__ import annotations

import os

from fastdata.formats._atomic import remove


def test_remove_takes_files_folders_and_links_but_not_their_targets(tmp_path):
    (tmp_path / "folder" / "inner").mkdir(parents=True)
    (tmp_path / "folder" / "inner" / "f").write_text("x")
    (tmp_path / "file").write_text("y")
    os.symlink(tmp_path / "folder", tmp_path / "link")
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling")
    remove(tmp_path / "link")
    assert not os.path.lexists(tmp_path / "link") and (tmp_path / "folder" / "inner" / "f").exists()
    remove(tmp_path / "dangling")
    remove(str(tmp_path / "file"))
    remove(tmp_path / "folder")
    remove(tmp_path / "absent")  # nothing there: nothing to do
    assert os.listdir(tmp_path) == []
