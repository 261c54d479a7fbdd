"""LG004: the definition of the code; the layouts and discovery report it."""

import numpy as np

from labelguard.core.registry import FixExample, define

UNCLEAN_LIST = define(
    "LG004", "list-entry-unclean", "warning",
    summary="a file-list entry has stray whitespace, CRLF, a BOM, or is blank or duplicated",
    why="""
Code that builds paths with line.rstrip('\\n') keeps the trailing space or '\\r', and
np.load('case_001.npz ') fails with 'No such file'; duplicated lines silently oversample.""",
    bad="'case_001.npz '  (trailing space)  /  'case_002\\r\\n'  (Windows line ending)",
    good="'case_001.npz'",
    fix="Strip every line, drop blank and duplicate lines, save with LF endings and no BOM "
    "(`labelguard fix list`).",
    fix_safety="safe", fix_command="labelguard fix list",
    fix_examples=(FixExample(
        "train.txt with CRLF endings, a trailing space, a blank and a duplicated line -> 'a.png\\nb.png\\n'",
        lambda: {"a.png": _mask(), "b.png": _mask(), "train.txt": "a.png \r\nb.png\r\n\r\nb.png\r\n"},
        "clean_list", {"lists": ["train.txt"]}, lambda: {"train.txt": "a.png\nb.png\n"},
        spec={"num_classes": 2}, options={"lists": ["train.txt"]}),),
)


def _mask():
    return np.eye(4, dtype=np.uint8)
