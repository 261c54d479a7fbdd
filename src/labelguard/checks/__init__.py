"""Check definitions (codes and their docs) and the checks that apply them to records.

Importing this package registers every code of the catalog.
"""

from labelguard.checks import files, classes, masks, boxes, dataset, runtime  # noqa: F401
