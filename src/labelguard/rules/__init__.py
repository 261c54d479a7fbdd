"""The rules: one module per code (``lgNNN.py``), each with the code's definition (or a
reference to it), its logic on a record and its failing/passing examples.

Importing this package imports every ``lg*`` module in it, which registers its rules in
:mod:`labelguard.core.rules` by scope: ``mask`` (one mask file's sample), ``pair`` (a mask
and its paired image) and ``dataset`` (the merged summary). A new rule is a new module here
and its test; nothing lists the rules by hand.
"""

import importlib
import pkgutil

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name.startswith("lg")):
    importlib.import_module(f"{__name__}.{_module}")
