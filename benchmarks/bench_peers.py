"""labelguard side by side with the dataset checks of Ultralytics and nnU-Net v2: what each
finds of a set of planted faults, and what each costs.

Writes two datasets with planted faults (``_peer_datasets.py``; each fault has an id, a
description and the files that carry it):

* a YOLO detection dataset: ``-n`` JPEG images (640x480, photos-like content), a tenth in val,
  1-6 boxes of 10 classes each, a ``data.yaml`` with the names; in train a truncated JPEG, a
  truncated PNG, a JPEG cut mid-scan that still ends with FF D9, an empty image file, a class
  id >= nc, a negative class id, a box outside [0, 1], a row of 4 values, duplicate boxes and a
  label file without an image;
* an nnU-Net v2 raw dataset (``Dataset001_X``: imagesTr, labelsTr, dataset.json, ``.nii.gz``)
  of ``--cases`` 64x64x32 volumes (int16 images, uint8 labels, written with nibabel): a label
  of spacing 3.0 beside an image of 2.5, an origin mismatch, a direction mismatch, a shape
  mismatch, a label value that dataset.json does not declare, a truncated image, a truncated
  label and a missing label.

Then runs, each as a whole process timed by ``os.wait4`` (wall time, and CPU time of the
process and the children it waited for: pools and threads included; imports and start-up
included, nothing subtracted), the best of ``--repeat`` rounds taken in turn:

* Ultralytics' label-cache scan: ``YOLODataset`` for train and val with no ``labels/*.cache``
  (deleted before each round), i.e. ``cache_labels`` mapping ``verify_image_label`` over its
  ThreadPool of ``NUM_THREADS`` (``min(8, cores - 1)``); what it reported per file is read back
  from the cache it wrote (its ``msgs``, nf/nm/ne/nc);
* ``labelguard audit DATA -f json --no-cache`` in its default mode (images checked by their
  structure: end markers, chunk checksums, no pixel decoded), and with ``--check-images full``
  (a complete decode; when this labelguard has the option, else the row is skipped with a note),
  each with the default workers and with ``--workers 1``;
* nnU-Net v2's ``verify_dataset_integrity(folder, num_processes)`` with the function's default
  (8) and with 2. It stops at the first stage that fails, so it runs again on a copy with the
  cases it named removed, until it passes or names none; the runs are counted, the first run
  and the whole chain timed;
* ``labelguard audit`` on the nnU-Net dataset with the default workers and ``-j 2`` (and full
  mode when present).

The peers live in their own virtual environment, ``benchmarks/.venv-peers`` (pinned versions,
made on ``--setup`` or on first use: torch's CPU build first, from the local wheel, so that no
CUDA build is pulled in); they run offline (``YOLO_OFFLINE``, their settings in a temporary
folder, and an audit hook that refuses and reports every socket connection and name look-up).
labelguard runs as the ``labelguard`` console script beside this interpreter (``--labelguard``
to name another command).

Targets (exit 1 when one is missed):

* no planted fault that a peer detects is missed by labelguard in every mode it ran;
* labelguard's default mode, default workers, is ahead of Ultralytics (wall time);
* ``--check-images full --workers 1`` takes at most 1.5x Ultralytics' wall time.

Usage::

    python benchmarks/bench_peers.py --setup            # make the peers' environment, then stop
    python benchmarks/bench_peers.py                    # 5,000 images, 150 cases, best of 3
    python benchmarks/bench_peers.py --only nnunet --cases 60 --repeat 1 --out peers.md
    python benchmarks/bench_peers.py -n 200 --cases 12 --no-peers   # labelguard's side alone
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _peer_datasets import (  # noqa: E402
    NNUNET_NAME, YOLO_CLASSES, Fault, copy_tree, nnunet_faults, plant_yolo_faults, remove_cases, write_nnunet,
    write_yolo,
)
import _docs  # noqa: E402  (the module beside this script)

HERE = Path(__file__).resolve().parent
PEERS_VENV = HERE / ".venv-peers"
# torch first and alone: the local CPU wheel; in one resolve with the peers, pip may pick a newer
# torch (torchvision 0.29 asks for 2.14) whose wheel is the CUDA build with gigabytes of libraries.
TORCH_PIN = "torch==2.13.0"
PEER_PINS = (TORCH_PIN, "torchvision==0.28.0", "ultralytics==8.4.190", "nnunetv2==2.8.1",
             # what Ultralytics installs itself on its first unidentifiable image when online
             "pi-heif==1.4.0")
PEER_MARKER = "PEER-RESULT"
DEFAULT_TARGET_FULL = 1.5  # full mode on one worker: at most this times Ultralytics' wall time
NNUNET_MAX_RUNS = 12


# ---- processes -------------------------------------------------------------------------------

@dataclass
class Run:
    wall: float
    cpu: float
    returncode: int
    stdout: str
    stderr: str


def run_process(command: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> Run:
    """Runs ``command`` to its end: wall time, and the CPU time ``os.wait4`` reports for it (its
    own and that of every child it waited for)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        process = subprocess.Popen(command, stdout=out, stderr=err, env=env, cwd=cwd)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Run(wall, usage.ru_utime + usage.ru_stime, process.returncode,
                   out.read().decode(errors="replace"), err.read().decode(errors="replace"))


@dataclass
class Timing:
    """The best wall and the best CPU time over the rounds (each the minimum of its own)."""
    wall: float = float("inf")
    cpu: float = float("inf")
    rounds: int = 0

    def add(self, wall: float, cpu: float) -> None:
        self.wall, self.cpu, self.rounds = min(self.wall, wall), min(self.cpu, cpu), self.rounds + 1


# ---- the peers' environment ------------------------------------------------------------------

def peers_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def peers_ready(venv: Path) -> bool:
    python = peers_python(venv)
    if not python.exists():
        return False
    done = subprocess.run([str(python), "-c", "import ultralytics, nnunetv2, pi_heif"], capture_output=True)
    return done.returncode == 0


def setup_peers(venv: Path) -> bool:
    """Makes ``venv`` with the pinned peers; prints each step. False (with why) when it fails."""
    steps = [[sys.executable, "-m", "venv", str(venv)],
             [str(peers_python(venv)), "-m", "pip", "install", "--quiet", TORCH_PIN],
             [str(peers_python(venv)), "-m", "pip", "install", "--quiet", *PEER_PINS]]
    for step in steps:
        print(f"peers' environment: {' '.join(step)}", flush=True)
        done = subprocess.run(step)
        if done.returncode != 0:
            print(f"peers' environment: that step exited {done.returncode}; the peers' rows are skipped")
            return False
    return peers_ready(venv)


def peer_env(config: Path) -> dict[str, str]:
    env = {**os.environ, "YOLO_OFFLINE": "1", "YOLO_CONFIG_DIR": str(config), "PYTHONDONTWRITEBYTECODE": "1"}
    for name in ("nnUNet_raw", "nnUNet_preprocessed", "nnUNet_results"):
        env[name] = str(config / name)
    for name in ("nnUNet_def_n_proc", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"):
        env.pop(name, None)
    return env


def run_peer(venv: Path, config: Path, *arguments: str) -> tuple[Run, dict]:
    run = run_process([str(peers_python(venv)), str(HERE / "_peer_checks.py"), *arguments], env=peer_env(config))
    result: dict = {}
    for line in run.stdout.splitlines():
        if line.startswith(PEER_MARKER):
            result = json.loads(line[len(PEER_MARKER):])
    if not result:
        tail = (run.stderr or run.stdout).strip().splitlines()[-3:]
        result = {"failed": f"exit {run.returncode}: {' / '.join(tail)}"}
    return run, result


# ---- labelguard ------------------------------------------------------------------------------

def labelguard_command(given: str | None) -> list[str]:
    if given:
        return given.split()
    beside = Path(sys.executable).parent / "labelguard"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("labelguard")
    return [found] if found else [sys.executable, "-m", "labelguard"]


def check_images_modes(command: list[str]) -> tuple[list[str], str]:
    """The values of ``--check-images`` this labelguard takes, and a note when it has none."""
    done = subprocess.run([*command, "audit", "--help"], capture_output=True, text=True)
    text = " ".join(done.stdout.split())
    if "--check-images" not in text:
        why = done.stderr.strip().splitlines()[-1:] if done.returncode else []
        return [], "this labelguard has no --check-images" + (f" ({why[0]})" if why else "")
    choices = re.search(r"--check-images \[([^\]]+)\]", text)
    if choices:
        return choices.group(1).split("|"), ""
    return ["full"], ""


@dataclass
class LabelguardRow:
    name: str
    arguments: list[str]
    timing: Timing = field(default_factory=Timing)
    findings: list[dict] = field(default_factory=list)
    failure: str = ""


def run_labelguard(command: list[str], target: Path, arguments: list[str], report: Path) -> tuple[Run, list[dict], str]:
    run = run_process([*command, "audit", str(target), "-f", "json", "-o", str(report), "--no-cache", "--no-config",
                       "--no-progress", *arguments], env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    if run.returncode not in (0, 1):
        last = (run.stderr.strip().splitlines() or [f"exit {run.returncode}"])[-1]
        return run, [], f"exit {run.returncode}: {last}"
    try:
        findings = json.loads(report.read_text(encoding="utf-8"))["findings"]
    except (OSError, ValueError, KeyError) as exc:
        return run, [], f"no JSON report ({exc})"
    return run, findings, ""


# ---- matching what a tool said to the planted faults -----------------------------------------

def finding_text(finding: dict) -> str:
    return f"{finding.get('path') or ''} {finding.get('message') or ''}"


def names_fault(text: str, fault: Fault) -> bool:
    return any(re.search(re.escape(name) + r"(?![\w.])", text) for name in fault.files)


def case_of(fault: Fault) -> str:
    return Path(fault.files[0]).name.split(".")[0]


def names_case(text: str, case: str) -> bool:
    return re.search(re.escape(case) + r"(?!\d)", text) is not None


def codes_for(fault: Fault, findings: list[dict]) -> list[str]:
    return sorted({finding["code"] for finding in findings if names_fault(finding_text(finding), fault)})


def unplanted(faults: list[Fault], findings: list[dict]) -> dict[str, int]:
    """Findings that name no planted fault's file, counted by code and severity."""
    counts: dict[str, int] = {}
    for finding in findings:
        if not any(names_fault(finding_text(finding), fault) for fault in faults):
            key = f"{finding['code']} ({finding.get('severity')})"
            counts[key] = counts.get(key, 0) + 1
    return counts


def shorten(text: str, width: int = 46) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 1] + "…"


# ---- the YOLO side ---------------------------------------------------------------------------

def ultralytics_words(message: str) -> str:
    words = message.split(": ignoring corrupt image/label: ", 1)[-1]
    return re.sub(r"^\w+: \S+: ", "", words)


def bench_yolo(args: argparse.Namespace, root: Path, lg: list[str], modes: list[str], peers: Path | None,
               config: Path, scratch: Path) -> dict:
    faults = plant_yolo_faults(root)
    rows = [LabelguardRow("labelguard default", []), LabelguardRow("labelguard default -j 1", ["--workers", "1"])]
    if "full" in modes:
        rows += [LabelguardRow("labelguard full", ["--check-images", "full"]),
                 LabelguardRow("labelguard full -j 1", ["--check-images", "full", "--workers", "1"])]
    peer_timing: Timing = Timing()
    peer_result: dict = {}
    for _ in range(args.repeat):
        if peers is not None:
            plant_yolo_faults(root)  # Ultralytics re-saves a JPEG it finds without its end marker
            run, peer_result = run_peer(peers, config, "yolo", str(root), str(len(YOLO_CLASSES)))
            if "failed" not in peer_result:
                peer_timing.add(run.wall, run.cpu)
        for row in rows:
            plant_yolo_faults(root)
            run, findings, failure = run_labelguard(lg, root, row.arguments, scratch / "report.json")
            row.findings, row.failure = findings, failure
            if not failure:
                row.timing.add(run.wall, run.cpu)
    msgs = [message for split in peer_result.get("splits", {}).values() for message in split["msgs"]]
    table = []
    for fault in faults:
        said = [message for message in msgs if names_fault(message, fault)]
        table.append({"fault": fault.id, "description": fault.description,
                      "peer": shorten(ultralytics_words(said[0])) if said else "",
                      "labelguard": {row.name: codes_for(fault, row.findings) for row in rows if not row.failure}})
    return {"dataset": "yolo", "faults": table, "peer_name": "Ultralytics", "peer_result": peer_result,
            "peer_ran": bool(peer_timing.rounds),
            "peer_timing": peer_timing if peer_timing.rounds else None, "rows": rows,
            "unplanted": {row.name: unplanted(faults, row.findings) for row in rows if not row.failure},
            "peer_unplanted": [m for m in msgs if not any(names_fault(m, fault) for fault in faults)]}


# ---- the nnU-Net side ------------------------------------------------------------------------

def nnunet_blocks(run: Run, result: dict) -> list[str]:
    """nnU-Net's messages: each "Error: ..." or "Warning: ..." its stdout prints (to the next
    blank line), then the error it stopped with."""
    text = run.stdout.split(PEER_MARKER, 1)[0]
    blocks = []
    for block in re.split(r"\n\s*\n|\n(?=(?:Error|Warning|WARNING|Images contain|Segmentation contains)\b)", text):
        kept = "\n".join(line for line in block.strip().splitlines() if not line.startswith("Using <class"))
        if kept:
            blocks.append(kept)
    if result.get("error"):
        blocks.append(result["error"].split("\nTraceback", 1)[0])
    return blocks


def nnunet_chain(peers: Path, config: Path, original: Path, work: Path, processes: str,
                 faults: list[Fault]) -> dict:
    """Runs nnU-Net's check until it passes, each time on a copy without the cases it named."""
    folder = copy_tree(original, work / NNUNET_NAME)
    runs, found = [], {}
    try:
        for number in range(1, NNUNET_MAX_RUNS + 1):
            run, result = run_peer(peers, config, "nnunet", str(folder), processes)
            blocks = nnunet_blocks(run, result)
            runs.append({"wall": run.wall, "cpu": run.cpu, "ok": result.get("ok", False),
                         "processes": result.get("processes"),
                         "failed": result.get("failed", ""), "network": result.get("network", []),
                         "stopped_on": shorten(blocks[-1], 90) if blocks and not result.get("ok") else ""})
            named = set()
            for fault in faults:
                said = [block for block in blocks if names_case(block, case_of(fault))]
                if said and fault.id not in found:
                    found[fault.id] = {"run": number, "words": shorten(said[0].splitlines()[0])}
                if said:
                    named.add(case_of(fault))
            if result.get("ok") or "failed" in result or not named:
                break
            remove_cases(folder, named)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {"runs": runs, "found": found}


def bench_nnunet(args: argparse.Namespace, root: Path, faults: list[Fault], lg: list[str], modes: list[str],
                 peers: Path | None, config: Path, scratch: Path) -> dict:
    rows = [LabelguardRow("labelguard default", []), LabelguardRow("labelguard -j 2", ["--workers", "2"])]
    if "full" in modes:
        rows += [LabelguardRow("labelguard full", ["--check-images", "full"]),
                 LabelguardRow("labelguard full -j 2", ["--check-images", "full", "--workers", "2"])]
    peer_rows = {"nnU-Net, default processes": "default", "nnU-Net, 2 processes": "2"}
    first = {name: Timing() for name in peer_rows}
    chain = {name: Timing() for name in peer_rows}
    chains: dict[str, dict] = {}
    for _ in range(args.repeat):
        if peers is not None:
            for name, processes in peer_rows.items():
                chains[name] = nnunet_chain(peers, config, root, scratch, processes, faults)
                runs = chains[name]["runs"]
                if runs and not runs[0]["failed"]:
                    first[name].add(runs[0]["wall"], runs[0]["cpu"])
                    chain[name].add(sum(r["wall"] for r in runs), sum(r["cpu"] for r in runs))
        for row in rows:
            run, findings, failure = run_labelguard(lg, root, row.arguments, scratch / "report.json")
            row.findings, row.failure = findings, failure
            if not failure:
                row.timing.add(run.wall, run.cpu)
    reference = chains.get(next(iter(peer_rows)), {"found": {}, "runs": []})
    table = []
    for fault in faults:
        said = reference["found"].get(fault.id)
        table.append({"fault": fault.id, "description": fault.description,
                      "peer": f"run {said['run']}: {said['words']}" if said else "",
                      "labelguard": {row.name: codes_for(fault, row.findings) for row in rows if not row.failure}})
    return {"dataset": "nnunet", "faults": table, "peer_name": "nnU-Net", "chains": chains,
            "peer_ran": bool(reference["runs"]),
            "peer_first": {name: timing for name, timing in first.items() if timing.rounds},
            "peer_chain": {name: timing for name, timing in chain.items() if timing.rounds}, "rows": rows,
            "unplanted": {row.name: unplanted(faults, row.findings) for row in rows if not row.failure}}


# ---- the report ------------------------------------------------------------------------------

def fault_table(result: dict) -> list[list[str]]:
    rows = [row for row in result["rows"] if not row.failure]
    header = ["fault", result["peer_name"], *(row.name.replace("labelguard ", "lg ") for row in rows)]
    lines = [header]
    for fault in result["faults"]:
        peer = ("yes: " + fault["peer"]) if fault["peer"] else "no" if result["peer_ran"] else "not run"
        lines.append([fault["fault"], peer,
                      *(",".join(fault["labelguard"][row.name]) or "-" for row in rows)])
    return lines


def print_table(lines: list[list[str]]) -> None:
    widths = [max(len(line[column]) for line in lines) for column in range(len(lines[0]))]
    for line in lines:
        print("  " + "  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip())


def missed(result: dict) -> list[str]:
    """Faults a peer detects that labelguard misses in every mode it ran."""
    return [fault["fault"] for fault in result["faults"]
            if fault["peer"] and fault["labelguard"] and not any(fault["labelguard"].values())]


def timing_lines(result: dict) -> list[tuple[str, Timing]]:
    lines = []
    if result["dataset"] == "yolo" and result["peer_timing"]:
        threads = result["peer_result"].get("threads", "?")
        lines.append((f"Ultralytics cache_labels ({threads} thread{'s' if threads != 1 else ''})",
                      result["peer_timing"]))
    if result["dataset"] == "nnunet":
        for name, timing in result["peer_first"].items():
            lines.append((f"{name}, first run", timing))
        for name, timing in result["peer_chain"].items():
            runs = len(result["chains"][name]["runs"])
            lines.append((f"{name}, all {runs} runs", timing))
    lines += [(row.name, row.timing) for row in result["rows"] if not row.failure and row.timing.rounds]
    return lines


def comparable(peer: str, row: str) -> bool:
    """nnU-Net's 2 processes beside labelguard's ``-j 2``, its default beside labelguard's default
    workers; Ultralytics' scan beside every labelguard row."""
    if "nnU-Net" not in peer:
        return True
    return ("2 processes" in peer) == ("-j 2" in row)


def ratio_lines(result: dict) -> list[tuple[str, float, float]]:
    """(what, peer/labelguard wall, peer/labelguard CPU)."""
    peers = [(name, timing) for name, timing in timing_lines(result) if not name.startswith("labelguard")]
    ours = [(row.name, row.timing) for row in result["rows"] if not row.failure and row.timing.rounds]
    return [(f"{peer} / {mine}", peer_t.wall / mine_t.wall, peer_t.cpu / mine_t.cpu)
            for peer, peer_t in peers for mine, mine_t in ours if comparable(peer, mine)]


def report(result: dict, files: int) -> None:
    title = {"yolo": f"YOLO, {files:,} images", "nnunet": f"nnU-Net v2, {files} cases"}[result["dataset"]]
    print(f"\n{title}: {len(result['faults'])} planted faults")
    print_table(fault_table(result))
    for fault in result["faults"]:
        print(f"    {fault['fault']}: {fault['description']}")
    for row in result["rows"]:
        if row.failure:
            print(f"  {row.name}: failed, not counted ({row.failure})")
    for name, counts in result["unplanted"].items():
        if counts:
            print(f"  {name}, findings naming no planted fault: "
                  + ", ".join(f"{count} {code}" for code, count in sorted(counts.items())))
    if result["dataset"] == "yolo" and result["peer_result"]:
        peer = result["peer_result"]
        if "failed" in peer:
            print(f"  Ultralytics failed: {peer['failed']}")
        for split, counts in peer.get("splits", {}).items():
            print(f"  Ultralytics {split}: {counts['nf']} labels found, {counts['nm']} missing, {counts['ne']} empty, "
                  f"{counts['nc']} corrupt of {counts['total']} images" + (f"; {counts['error']}" if counts["error"]
                                                                             else ""))
        if result["peer_unplanted"]:
            print(f"  Ultralytics, messages naming no planted fault: {len(result['peer_unplanted'])}")
        if peer.get("network"):
            print(f"  Ultralytics tried the network (refused): {peer['network'][:3]}")
    if result["dataset"] == "nnunet":
        for name, chain in result["chains"].items():
            stops = "; ".join(f"run {number}: {run['stopped_on'] or ('passed' if run['ok'] else run['failed'])}"
                              for number, run in enumerate(chain["runs"], 1))
            processes = chain["runs"][0]["processes"] if chain["runs"] else None
            print(f"  {name} (num_processes={processes}): {len(chain['runs'])} runs ({stops})")
            network = [call for run in chain["runs"] for call in run["network"]]
            if network:
                print(f"  {name} tried the network (refused): {network[:3]}")
    lines = timing_lines(result)
    if lines:
        print("  times (best of the rounds; wall, CPU of the process and its children):")
        for name, timing in lines:
            print(f"    {name:<44} wall {timing.wall:7.2f} s   CPU {timing.cpu:7.2f} s")
    for what, wall, cpu in ratio_lines(result):
        print(f"  ratio {what}: wall {wall:.2f}x, CPU {cpu:.2f}x")


def verdicts(results: list[dict]) -> list[tuple[str, bool]]:
    checks = []
    for result in results:
        gone = missed(result)
        checks.append((f"{result['dataset']}: labelguard misses no fault {result['peer_name']} detects"
                       + (f" (missed: {', '.join(gone)})" if gone else ""), not gone))
        if result["dataset"] != "yolo" or not result["peer_timing"]:
            continue
        peer = result["peer_timing"].wall
        rows = {row.name: row.timing for row in result["rows"] if not row.failure and row.timing.rounds}
        if "labelguard default" in rows:
            checks.append((f"yolo: default mode ahead of Ultralytics (wall {rows['labelguard default'].wall:.2f} s "
                           f"vs {peer:.2f} s)", rows["labelguard default"].wall < peer))
        if "labelguard full -j 1" in rows:
            full = rows["labelguard full -j 1"].wall
            checks.append((f"yolo: full mode, one worker, within {DEFAULT_TARGET_FULL}x Ultralytics "
                           f"({full / peer:.2f}x)", full <= DEFAULT_TARGET_FULL * peer))
    return checks


def as_data(results: list[dict], setting: dict) -> dict:
    def timing(value: Timing) -> dict:
        return {"wall_s": round(value.wall, 3), "cpu_s": round(value.cpu, 3), "rounds": value.rounds}

    data: dict = {"setting": setting, "datasets": []}
    for result in results:
        data["datasets"].append({
            "dataset": result["dataset"], "faults": result["faults"],
            "times": {name: timing(value) for name, value in timing_lines(result)},
            "ratios": [{"what": what, "wall": round(wall, 3), "cpu": round(cpu, 3)}
                       for what, wall, cpu in ratio_lines(result)],
            "failed": {row.name: row.failure for row in result["rows"] if row.failure},
            "nnunet_runs": {name: len(chain["runs"]) for name, chain in result.get("chains", {}).items()}})
    data["targets"] = [{"target": text, "met": met} for text, met in verdicts(results)]
    return data


def as_markdown(results: list[dict], data: dict) -> str:
    parts = [f"# labelguard beside Ultralytics and nnU-Net v2\n\n{json.dumps(data['setting'])}\n"]
    for result, figures in zip(results, data["datasets"]):
        table = fault_table(result)
        parts.append(f"\n## {result['dataset']}\n\n| " + " | ".join(table[0]) + " |\n|"
                     + "---|" * len(table[0]) + "\n"
                     + "".join("| " + " | ".join(cell.replace("|", "/") for cell in line) + " |\n"
                               for line in table[1:]))
        parts.append("\n| run | wall s | CPU s |\n|---|---|---|\n" + "".join(
            f"| {name} | {value['wall_s']} | {value['cpu_s']} |\n" for name, value in figures["times"].items()))
        parts.append("\n| ratio peer / labelguard | wall | CPU |\n|---|---|---|\n" + "".join(
            f"| {ratio['what']} | {ratio['wall']} | {ratio['cpu']} |\n" for ratio in figures["ratios"]))
    parts.append("\n" + "".join(f"- {'met' if t['met'] else 'MISSED'}: {t['target']}\n" for t in data["targets"]))
    return "".join(parts)


# ---- main ------------------------------------------------------------------------------------

def ensure_datasets(root: Path, count: int, cases: int, which: set[str]) -> tuple[Path, Path]:
    """The two datasets under ``root``, written unless a previous run left them at these sizes."""
    root.mkdir(parents=True, exist_ok=True)
    marker = root / "bench-peers.json"
    sizes = json.loads(marker.read_text()) if marker.exists() else {}
    yolo, nnunet_parent = root / "yolo", root / "nnunet"
    started = time.perf_counter()
    if "yolo" in which and sizes.get("count") != count:
        shutil.rmtree(yolo, ignore_errors=True)
        write_yolo(yolo, count)
        sizes["count"] = count
    if "nnunet" in which and sizes.get("cases") != cases:
        shutil.rmtree(nnunet_parent, ignore_errors=True)
        write_nnunet(nnunet_parent, cases)
        sizes["cases"] = cases
    marker.write_text(json.dumps(sizes))
    print(f"datasets ready in {time.perf_counter() - started:.1f} s", flush=True)
    return yolo, nnunet_parent / NNUNET_NAME


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--count", type=int, default=5000, help="YOLO images (default 5000)")
    parser.add_argument("--cases", type=int, default=150, help="nnU-Net cases (default 150; at least 9)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds taken in turn; the best counts (default 3)")
    parser.add_argument("--dir", type=Path, help="datasets' folder (reused if present); default: a temp dir")
    parser.add_argument("--only", choices=("yolo", "nnunet"), help="one dataset only")
    parser.add_argument("--out", type=Path, help="write the figures here (.md: markdown, else JSON)")
    parser.add_argument("--labelguard", help="labelguard's command (default: the console script beside Python)")
    parser.add_argument("--peers-venv", type=Path, default=PEERS_VENV, help="the peers' virtual environment")
    parser.add_argument("--setup", action="store_true", help="make the peers' environment, then stop")
    parser.add_argument("--no-peers", action="store_true", help="labelguard's side only (peers' rows skipped)")
    docs = _docs.Report("bench_peers", parser)
    args = parser.parse_args(argv)
    docs.start(args)
    if args.cases < 9:
        parser.error("--cases must be at least 9 (cases 1-8 carry the faults)")

    if args.setup:
        return 0 if peers_ready(args.peers_venv) or setup_peers(args.peers_venv) else 1
    peers: Path | None = None
    if args.no_peers:
        print("peers: skipped (--no-peers): only labelguard's rows are measured, no ratio is judged")
    elif peers_ready(args.peers_venv) or setup_peers(args.peers_venv):
        peers = args.peers_venv
    else:
        print(f"peers: skipped ({args.peers_venv} could not be made): only labelguard's rows are measured")
    lg = labelguard_command(args.labelguard)
    modes, note = check_images_modes(lg)
    if note or "full" not in modes:
        print(f"labelguard full mode: skipped ({note or 'no full among ' + '|'.join(modes)})")
    which = {args.only} if args.only else {"yolo", "nnunet"}

    temporary = None
    if args.dir is None:
        temporary = tempfile.TemporaryDirectory(prefix="labelguard-bench-peers-")
        root = Path(temporary.name)
    else:
        root = args.dir
    try:
        yolo, nnunet = ensure_datasets(root, args.count, args.cases, which)
        load = os.getloadavg()
        setting = {"cores": os.cpu_count(), "load_before": [round(value, 2) for value in load],
                   "repeat": args.repeat, "images": args.count, "cases": args.cases}
        print(f"{os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} before; "
              f"best of {args.repeat} rounds taken in turn; labelguard: {' '.join(lg)}", flush=True)
        results = []
        with tempfile.TemporaryDirectory(prefix="bench-peers-work-") as work:
            scratch, config = Path(work), Path(work) / "peer-config"
            config.mkdir()
            if "yolo" in which:
                results.append(bench_yolo(args, yolo, lg, modes, peers, config, scratch))
                report(results[-1], args.count)
            if "nnunet" in which:
                results.append(bench_nnunet(args, nnunet, nnunet_faults(), lg, modes, peers, config, scratch))
                report(results[-1], args.cases)
        setting["load_after"] = [round(value, 2) for value in os.getloadavg()]
        print(f"\nload average after: {' '.join(f'{value:.2f}' for value in os.getloadavg())}")
        checks = verdicts(results) if peers is not None else []
        for text, met in checks:
            print(f"{'PASS' if met else 'FAIL'}: {text}")
        failed_rows = [row.name for result in results for row in result["rows"] if row.failure]
        if peers is None:
            print("targets: not judged without the peers")
        data = as_data(results, setting)
        for result in results:
            title = {"yolo": f"YOLO, {args.count:,} images", "nnunet": f"nnU-Net v2, {args.cases} cases"}
            for name, timing in timing_lines(result):
                docs.row(f"{title[result['dataset']]}: {name}", f"wall {timing.wall:.2f} s, CPU {timing.cpu:.2f} s")
            for what, wall, cpu in ratio_lines(result):
                docs.row(f"{title[result['dataset']]}: {what}", "", f"wall {wall:.2f}x, CPU {cpu:.2f}x")
        if peers is None:
            docs.note("The peers were not run, so no ratio was measured: their environment is made by "
                      "`python benchmarks/bench_peers.py --setup` (it installs pinned Ultralytics and nnU-Net v2 "
                      "into `benchmarks/.venv-peers`), then this command again.")
        docs.notes += [f"{'PASS' if met else 'FAIL'}: {text}." for text, met in checks]
        docs.finish()
        if args.out:
            args.out.write_text(as_markdown(results, data) if args.out.suffix == ".md" else json.dumps(data, indent=2))
        return 1 if failed_rows or not all(met for _, met in checks) else 0
    finally:
        if temporary is not None:
            temporary.cleanup()


if __name__ == "__main__":
    sys.exit(main())
