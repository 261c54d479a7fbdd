"""The rules: one module per code (``lgNNN.py``), each with the code's definition (or a
reference to it), its logic on a record and its failing/passing examples.

Importing this package imports every ``lg*`` module in it, which registers its rules in
:mod:`labelguard.core.rules` by scope: ``mask`` (one mask file's sample), ``pair`` (a mask
and its paired image), ``annotation`` (one annotation file of any format: VOC, YOLO, COCO,
CSV tables, ImageFolder class folders) and ``dataset`` (the merged summary). A new rule is a
new module here and its test; nothing lists the rules by hand. The private modules serve
them: ``_annotations`` (the processor every annotation format binds its reader to),
``_objects`` (how objects, boxes and images are named in messages), ``_examples`` (writers
of example files), ``_masks``/``_analysis``/``_dataset`` (the mask and dataset side).
"""

import importlib
import pkgutil

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name.startswith("lg")):
    importlib.import_module(f"{__name__}.{_module}")
