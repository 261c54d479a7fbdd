"""The peers' own dataset checks, run by ``bench_peers.py`` as a whole process with the peers'
interpreter (``benchmarks/.venv-peers``, where Ultralytics and nnU-Net v2 are installed; this
module imports nothing of labelguard). It prints what the peer reported as one JSON line after
the marker ``PEER-RESULT``; nnU-Net's own words go to stdout before it, as they do for a user.

    python _peer_checks.py yolo DATASET NUM_CLASSES
    python _peer_checks.py nnunet DATASET_FOLDER NUM_PROCESSES|default

No network: an audit hook refuses every socket connection and name look-up, and each refused
one is reported (``network``), so a peer that tried to reach a host shows in the result.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

MARKER = "PEER-RESULT"
REFUSED: list[str] = []


def _refuse_network(event: str, args: tuple) -> None:
    if event in {"socket.connect", "socket.getaddrinfo", "socket.gethostbyname", "socket.sendto"}:
        REFUSED.append(f"{event} {args[1:2] if event == 'socket.connect' else args[:1]}")
        raise OSError(f"network refused by the benchmark: {event}")


def run_yolo(dataset: Path, num_classes: int) -> dict:
    """Ultralytics' label-cache scan, as ``YOLODataset`` runs it when no ``labels/<split>.cache``
    holds the dataset's hash: ``cache_labels`` maps ``verify_image_label`` over a ThreadPool of
    ``NUM_THREADS``, then the cache file with its messages is read back."""
    from ultralytics.data.dataset import YOLODataset
    from ultralytics.data.utils import load_dataset_cache_file
    from ultralytics.utils import NUM_THREADS

    data = {"names": {index: f"class{index}" for index in range(num_classes)}, "nc": num_classes, "channels": 3}
    splits = {}
    start = time.perf_counter()
    for split in ("train", "val"):
        cache = dataset / "labels" / f"{split}.cache"
        cache.unlink(missing_ok=True)
        error = ""
        try:
            YOLODataset(img_path=str(dataset / "images" / split), data=data, task="detect", augment=False,
                        prefix=f"{split}: ")
        except Exception as exc:  # a split without one valid image raises; its messages are still in the cache
            error = f"{type(exc).__name__}: {exc}"
        saved = load_dataset_cache_file(cache) if cache.exists() else {"results": (0, 0, 0, 0, 0), "msgs": []}
        nf, nm, ne, nc, total = saved["results"]
        splits[split] = {"nf": nf, "nm": nm, "ne": ne, "nc": nc, "total": total, "msgs": list(saved["msgs"]),
                         "error": error}
        cache.unlink(missing_ok=True)
    return {"splits": splits, "threads": NUM_THREADS, "check_s": time.perf_counter() - start}


def run_nnunet(folder: Path, processes: str) -> dict:
    """nnU-Net v2's ``verify_dataset_integrity(folder, num_processes)`` (the check
    ``nnUNetv2_plan_and_preprocess --verify_dataset_integrity`` runs), with the function's own
    default process count for ``default``."""
    from nnunetv2.experiment_planning.verify_dataset_integrity import verify_dataset_integrity

    default = inspect.signature(verify_dataset_integrity).parameters["num_processes"].default
    start = time.perf_counter()
    error = ""
    try:
        if processes == "default":
            verify_dataset_integrity(str(folder))
        else:
            verify_dataset_integrity(str(folder), num_processes=int(processes))
    except BaseException as exc:  # it stops at its first failing stage, by assert or raise
        error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=2)}"
    sys.stdout.flush()
    return {"ok": not error, "error": error, "check_s": time.perf_counter() - start,
            "processes": default if processes == "default" else int(processes)}


def main(argv: list[str]) -> int:
    sys.addaudithook(_refuse_network)
    mode, target, option = argv
    with tempfile.TemporaryDirectory(prefix="peer-config-") as config:
        os.environ.setdefault("YOLO_OFFLINE", "1")
        os.environ.setdefault("YOLO_CONFIG_DIR", config)
        for name in ("nnUNet_raw", "nnUNet_preprocessed", "nnUNet_results"):
            os.environ.setdefault(name, os.path.join(config, name))
        result = run_yolo(Path(target), int(option)) if mode == "yolo" else run_nnunet(Path(target), option)
    result["network"] = REFUSED
    sys.stdout.flush()
    print(MARKER + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
