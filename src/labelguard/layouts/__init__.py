"""Dataset layouts: find the files of a dataset, pair them, and make the per-file tasks.

Each layout module registers itself in :data:`labelguard.layouts.base.LAYOUTS` with a
``detect`` function that returns :class:`~labelguard.layouts.base.Evidence` (a confidence and
the reasons for and against) and a ``discover`` function; the most confident layout reads a
folder, and near-ties are reported.
"""

from labelguard.layouts import masks  # noqa: F401  (registers the mask layouts)
from labelguard.layouts import classification, coco  # noqa: F401
from labelguard.layouts import voc, yolo  # noqa: F401
from labelguard.layouts import tokens  # noqa: F401
from labelguard.layouts.base import LAYOUTS, AuditOptions, Discovery, discover

__all__ = ["LAYOUTS", "AuditOptions", "Discovery", "discover"]
