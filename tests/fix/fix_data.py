"""Mask datasets in every rewritable format, for the fix tests (built with tests/builders.py)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from builders import organic_mask, write_h5, write_nifti, write_npy, write_npz, write_png, write_tiff

FORMATS = ("png-L", "png-P", "png-I16", "tiff", "npy", "npz", "hdf5", "nifti")


def binary_255_mask(seed: int = 0, size: tuple[int, int] = (32, 32)) -> np.ndarray:
    """A 0/255 binary mask (the LG209 case): classes 0 and 255."""
    return organic_mask(size, classes=(0, 255), seed=seed)


def write_mask(folder: Path, fmt: str, name: str, mask: np.ndarray) -> Path:
    """One mask in ``fmt``; containers carry extra content the fix must keep."""
    folder = Path(folder)
    if fmt == "png-L":
        return write_png(folder / f"{name}.png", mask)
    if fmt == "png-P":
        return write_png(folder / f"{name}.png", mask, mode="P")
    if fmt == "png-I16":
        return write_png(folder / f"{name}.png", mask.astype(np.uint16), mode="I;16")
    if fmt == "tiff":
        return write_tiff(folder / f"{name}.tif", mask)
    if fmt == "npy":
        return write_npy(folder / f"{name}.npy", mask)
    if fmt == "npz":
        return write_npz(folder / f"{name}.npz", image=np.random.default_rng(1).random(mask.shape), label=mask)
    if fmt == "hdf5":
        import h5py

        path = write_h5(folder / f"{name}.h5", image=np.random.default_rng(1).random(mask.shape), label=mask)
        with h5py.File(path, "r+") as handle:
            handle.attrs["site"] = "A"
            handle["label"].attrs["unit"] = "class"
        return path
    if fmt == "nifti":
        affine = np.diag([0.8, 0.8, 2.5, 1.0])
        return write_nifti(folder / f"{name}.nii.gz", mask[:, :, None].astype(np.uint8), affine=affine)
    raise ValueError(fmt)


def mask_dataset(root: Path, fmt: str, n: int = 3) -> list[Path]:
    return [write_mask(Path(root) / "masks", fmt, f"case_{i:03d}", binary_255_mask(i)) for i in range(n)]


def digests(paths) -> dict[str, str]:
    return {str(p): hashlib.sha256(Path(p).read_bytes()).hexdigest() for p in paths}
