"""LG004: the definition of the code; the layouts and discovery report it."""

from labelguard.core.registry import define

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
)
