"""Lazy imports of optional heavy dependencies, with one clear message when they are missing."""

from __future__ import annotations

import importlib
from types import ModuleType

from labelguard.errors import MissingDependency

# module name -> the extra of pyproject.toml that installs it (a test holds them equal)
_EXTRAS = {
    "h5py": "hdf5",
    "nibabel": "nifti",
    "tifffile": "tiff",
    "torch": "torch",
    "pyarrow": "nlp",
    "matplotlib": "html",
    "deflate": "png",
    "dask": "dask",
    "fsspec": "s3",
    "s3fs": "s3",
}


def require(module: str, purpose: str = "") -> ModuleType:
    """Import ``module`` or raise :class:`MissingDependency` naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        what = f" to {purpose}" if purpose else ""
        raise MissingDependency(f"{module} is needed{what}: {install_command(extra_of(module))}") from exc


def extra_of(module: str) -> str:
    """The extra of pyproject.toml that installs ``module`` (``all`` for one it does not name)."""
    return _EXTRAS.get(module.split(".")[0], "all")


def install_command(extra: str) -> str:
    """The command that installs the extra ``extra``."""
    return f"pip install 'labelguard[{extra}]'"


def available(module: str) -> bool:
    """True when ``module`` can be imported."""
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True
