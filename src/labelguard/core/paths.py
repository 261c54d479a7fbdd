"""Where a path lies: the one test of "inside the dataset", as written and with links resolved.

:func:`inside_root` judges a path as it is written, made absolute and normalised (``..``
collapsed, links not followed): where a loader opens it. :func:`resolves_inside` judges
what the file system really reaches once every symbolic link is resolved: what a read or a
write of the path touches. A path a dataset's metadata names (a data.yaml's splits, the
names file of an obj.data) must pass both before it is read; a file ``fix`` writes must
pass the second. URLs of object storage have no links: both tests are the same for them.
"""

from __future__ import annotations

import os

from labelguard.core import storage


def is_below(path: str, root: str) -> bool:
    """True when the absolute, normalised ``path`` is ``root`` or lies below it."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def inside_root(path: str, root: str) -> bool:
    """True when ``path`` is ``root`` or lies below it (both made absolute and normalised;
    links are not followed, as loaders open the path as written)."""
    return is_below(storage.abspath(path), storage.abspath(root))


def resolves_inside(path: str, root: str) -> bool:
    """True when ``path`` lies inside ``root`` once every symbolic link of both is resolved
    (:func:`inside_root` on the real paths): what reading or writing ``path`` really reaches."""
    if storage.url_scheme(path) or storage.url_scheme(root):
        return inside_root(path, root)
    return inside_root(os.path.realpath(path), os.path.realpath(root))
