"""Mask containers added as modules of their own: each module registers its reader with
``@labelguard.readers.masks.mask_reader(name, magic=..., extensions=...)``; ``readers.masks``
imports every module here. The built-in containers (PNG, TIFF, NPY, NPZ, HDF5, NIfTI...) are
read in ``readers/masks.py`` itself."""
