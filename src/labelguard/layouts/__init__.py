"""Dataset layouts: find the files of a dataset, pair them, and make the per-file tasks.

One module per layout (a package for a layout that is an annotation format's home: its
parser, record builder and editor beside its discovery, see :mod:`labelguard.layouts.formats`),
registered in :data:`labelguard.layouts.base.LAYOUTS` with a ``detect`` function that returns
:class:`~labelguard.layouts.base.Evidence` (a confidence and the reasons for and against) and a
``discover`` function; the most confident layout reads a folder. Importing this package imports every layout module in
it: a new layout is a new module here and its test; nothing lists the layouts by hand. The
modules of :data:`INFRASTRUCTURE` (the registry and discovery, the pairing engine and its
naming conventions, file lists, metadata files, walking folders, the inventory of a
dataset's files, the files an annotation names, the registry of annotation formats) and
the private ``_`` modules (``_mask_common``: what the mask layouts share) serve them and
register none.
"""

import importlib
import pkgutil

from labelguard.layouts.base import LAYOUTS, AuditOptions, Discovery, discover

INFRASTRUCTURE = frozenset({
    "base", "conventions", "folders", "formats", "inventory", "lists", "metadata", "pairing", "references",
})

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)
                      if not m.name.startswith("_") and m.name not in INFRASTRUCTURE):
    importlib.import_module(f"{__name__}.{_module}")

__all__ = ["LAYOUTS", "AuditOptions", "Discovery", "discover"]
