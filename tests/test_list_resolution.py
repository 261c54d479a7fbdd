"""List entries resolve the same from folder listings as from a stat per try.

:class:`DirectoryListings` lets a list of millions of entries cost one listing per folder; it
must answer exactly what :func:`os.path.isfile` / :func:`os.path.exists` answer, for every
kind of name a list holds (plain, with ``..`` or ``./``, absolute, without its extension)
and every kind of entry a folder holds (files, folders, links to either, broken links).
"""

from __future__ import annotations

import os
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labelguard.layouts.lists import DirectoryListings, ListRule, resolve_entry

EXTENSIONS = (".png", ".nii.gz", ".npy", ".jpg")


def build_tree(root) -> list[str]:
    """A dataset folder with files, folders and links of every kind, and a file outside it;
    the names a list may hold for them."""
    (root / "data" / "masks" / "sub").mkdir(parents=True)
    (root / "data" / "lists").mkdir()
    (root / "outside").mkdir()
    for name in ("a.png", "b.nii.gz", "c", "d.npy", "e.png.png", "sub/f.jpg", ".hidden.png", "space .png"):
        (root / "data" / "masks" / name).write_bytes(b"x")
    (root / "data" / "masks" / "folder.png").mkdir()
    (root / "outside" / "secret.png").write_bytes(b"x")
    (root / "data" / "masks" / "link.png").symlink_to(root / "data" / "masks" / "a.png")
    (root / "data" / "masks" / "dirlink").symlink_to(root / "data" / "masks" / "sub")
    (root / "data" / "masks" / "broken.png").symlink_to(root / "data" / "masks" / "gone.png")
    (root / "data" / "masks" / "out.png").symlink_to(root / "outside" / "secret.png")
    return ["masks/a.png", "masks/a", "masks/b", "masks/b.nii", "masks/b.nii.gz", "masks/c", "masks/d",
            "masks/e.png", "masks/e", "masks/sub/f", "masks/sub/f.jpg", "masks/.hidden", "masks/space ",
            "masks/folder.png", "masks/folder", "masks/link", "masks/dirlink", "masks/dirlink/f.jpg",
            "masks/broken.png", "masks/broken", "masks/out", "masks/gone.png", "masks", "masks/sub",
            "../outside/secret.png", "../outside/secret", "masks/../masks/a.png", "./masks/a.png",
            "masks//a.png", "masks/a.png/", "a.png", "sub/f.jpg", "../masks/a.png", str(root / "outside" / "secret.png"),
            "/masks/a.png", "masks\\a.png", "..", ".", "missing/x.png", "lists", "lists/../masks/d"]


def both_ways(name: str, root: str, list_dir: str, rule: ListRule) -> tuple[tuple, tuple]:
    return (resolve_entry(name, root, list_dir, rule),
            resolve_entry(name, root, list_dir, rule, DirectoryListings()))


@pytest.mark.parametrize("rule", [ListRule(extensions=EXTENSIONS), ListRule(), ListRule(folders=True),
                                  ListRule(extensions=EXTENSIONS, loose=True)],
                         ids=["extensions", "exact", "folders", "loose"])
def test_listings_resolve_every_kind_of_name_as_stats_do(tmp_path, rule):
    names = build_tree(tmp_path)
    root = str(tmp_path / "data")
    list_dir = str(tmp_path / "data" / "lists")
    listings = DirectoryListings()  # one for all names, as a list's reading shares one
    for name in names:
        by_stat = resolve_entry(name, root, list_dir, rule)
        assert resolve_entry(name, root, list_dir, rule, listings) == by_stat, name


@settings(max_examples=150, deadline=None)
@given(parts=st.lists(st.sampled_from(["masks", "sub", "..", ".", "a", "a.png", "b", "b.nii", "c", "x",
                                        "dirlink", "folder.png", "link", "out", ""]), min_size=1, max_size=4),
       extension=st.sampled_from(["", ".png", ".gz", ".nii.gz", ".jpg"]),
       prefix=st.sampled_from(["", "/", "./"]),
       separator=st.sampled_from(["/", "//"]),
       suffix=st.text(alphabet=string.ascii_letters + " ._", max_size=2))
def test_listings_agree_with_stats_on_generated_names(tmp_path_factory, parts, extension, prefix, separator, suffix):
    root_path = tmp_path_factory.mktemp("tree")
    build_tree(root_path)
    name = prefix + separator.join(parts) + suffix + extension
    root = str(root_path / "data")
    list_dir = str(root_path / "data" / "lists")
    for rule in (ListRule(extensions=EXTENSIONS), ListRule(folders=True, loose=True)):
        by_stat, by_listing = both_ways(name, root, list_dir, rule)
        assert by_listing == by_stat, (name, rule)


def test_a_listing_is_read_once_per_folder_for_all_entries(tmp_path):
    (tmp_path / "masks").mkdir()
    (tmp_path / "masks" / "m0.png").write_bytes(b"x")
    listings = DirectoryListings()
    rule = ListRule(extensions=EXTENSIONS)
    results = [resolve_entry(f"masks/missing_{i}", str(tmp_path), str(tmp_path), rule, listings) for i in range(50)]
    assert results == [(None, False)] * 50
    # A file added after the folder was listed is not seen by the same listings: one reading
    # of a list is one view of the folder.
    (tmp_path / "masks" / "late.png").write_bytes(b"x")
    assert resolve_entry("masks/late", str(tmp_path), str(tmp_path), rule, listings) == (None, False)
    assert resolve_entry("masks/late", str(tmp_path), str(tmp_path), rule)[0] == os.path.join(
        str(tmp_path), "masks", "late.png")
