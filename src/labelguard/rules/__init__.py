"""The rules: one module per code (``lgNNN.py``), each with the code's definition, its logic
on a record and its failing/passing examples (and, for a fixable code, its fix examples).

Importing this package imports every ``lg*`` module in it, which registers its rules in
:mod:`labelguard.core.rules` by scope (``mask``, ``pair``, ``annotation``, ``tokens``,
``entries``, ``files``, ``dataset``: see there). A new rule is a new module here and its test;
nothing lists the rules by hand. The private modules serve them: the per-file work
(``_masks``, ``_annotations``, ``_token_files``), what the guard's targets become
(``_runtime``), files that were not read (``_unread``), shared helpers of codes (``_labels``,
``_entries``, ``_tokens``, ``_objects``, ``_analysis``, ``_dataset``) and writers of example
files (``_examples``).
"""

import importlib
import pkgutil

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name.startswith("lg")):
    importlib.import_module(f"{__name__}.{_module}")
