"""The Dask engine (labelguard.core.dask_engine) on real clusters on loopback: a LocalCluster
of worker processes, and a scheduler and two workers started as `dask scheduler` / `dask
worker` commands. The same report as the local engine on every kind of dataset, a worker
killed mid-audit losing and duplicating nothing, the result cache shared by the workers, and
every way of asking for a cluster that cannot work being an error that says so.

The tests that need a cluster skip when the dask extra is absent; the usage errors and the
missing extra's message are checked without it.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest
from click.testing import CliRunner

from audit_helpers import merged_results
from builders import organic_mask, write_png
from detection_builders import generated_voc
from fragile_processors import fragile
from rule_examples import write_example_file
from test_cache import age, masks_dataset

import labelguard
from labelguard._audit import audit
from labelguard._optional import available
from labelguard.cli import main
from labelguard.core.engine import run_tasks
from labelguard.core.rules import all_rules
from labelguard.core.spec import LabelSpec
from labelguard.errors import ClusterError, SpecError, UsageError
from labelguard.layouts import AuditOptions, discover

needs_dask = pytest.mark.skipif(not available("distributed"), reason="the dask extra is not installed")
SRC = str(Path(labelguard.__file__).resolve().parents[1])
SPEC = LabelSpec(num_classes=3)


@pytest.fixture(scope="module")
def client():
    """A LocalCluster of two worker processes (one thread each) on loopback, with a client."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address="127.0.0.1:0", silence_logs=logging.CRITICAL) as cluster, \
            Client(cluster, set_as_default=False) as connected:
        yield connected


def without_engine_note(report: dict) -> dict:
    """A JSON report without the note that says where the per-file work ran."""
    report = json.loads(json.dumps(report, default=str))
    report["summary"]["notes"] = [n for n in report["summary"]["notes"] if "per-file work ran on" not in n]
    return report


def masks(folder: Path, count: int) -> Path:
    """``count`` masks of values 0..2, every seventh with a 9 (LG201)."""
    for index in range(count):
        mask = organic_mask((24, 20), classes=(0, 1, 2), seed=index)
        if index % 7 == 0:
            mask[0, :3] = 9
        write_png(folder / f"{index:03d}.png", mask)
    return folder


# ---- batches ---------------------------------------------------------------------------------

def test_batches_keep_every_thread_busy_and_the_schedulers_load_flat():
    from labelguard.core.dask_engine import DASK_BATCH_FILES, SCHEDULER_FILES_PER_THREAD, dask_batch_size

    assert dask_batch_size(20_000, 2) == 20_000 // (2 * 16)  # the local pool's rule, 16 batches a thread
    assert dask_batch_size(3, 2) == 1 and dask_batch_size(0, 2) == 1
    assert dask_batch_size(10 ** 7, 2) == DASK_BATCH_FILES
    for threads in (10, 100, 1000, 10_000):
        size = dask_batch_size(10 ** 8, threads)
        assert 10 ** 8 // size >= threads  # a batch for every thread
        assert size >= min(SCHEDULER_FILES_PER_THREAD * threads, 10 ** 8 // threads)


# ---- the same report as the local engine ---------------------------------------------------

@needs_dask
def test_every_kind_of_dataset_gets_the_local_engines_report(client, tmp_path, monkeypatch):
    """Every rule's examples (masks, VOC, COCO, YOLO, tables, class folders, pairs...), each a
    dataset of its own, audited together per spec, plus a mask folder and a VOC folder large
    enough for batches of several files: the same JSON report, given relative paths, from
    workers whose working folder is not the audit's."""
    monkeypatch.chdir(tmp_path)
    groups: dict[str, list] = defaultdict(list)
    for index, example in enumerate(e for r in all_rules() for e in r.examples):
        if example.options:
            continue
        for relative, content in example.files().items():
            write_example_file(tmp_path / f"e{index:03d}" / relative, content)
        groups[json.dumps(sorted(example.spec.items()), default=repr)].append((example.spec, f"e{index:03d}"))
    masks(tmp_path / "big" / "masks", 150)
    generated_voc(tmp_path / "voc", 150, classes=("car", "Car", "bus"))
    groups["[]"] += [({}, "big"), ({}, "voc")]
    layouts, codes = set(), set()
    for items in groups.values():
        spec, paths = LabelSpec(**items[0][0]), [path for _, path in items]
        local = audit(paths, spec, use_project_config=False, cache=False, workers=1)
        on_dask = audit(paths, spec, use_project_config=False, cache=False, client=client)
        assert without_engine_note(on_dask.to_dict()) == without_engine_note(local.to_dict()), paths
        assert [f.to_dict() for f in on_dask.findings] == [f.to_dict() for f in local.findings]
        layouts.update(local.layouts)
        codes.update(f.code for f in local.findings)
    assert {"masks", "voc", "coco", "yolo", "csv", "imagefolder", "paired"} <= layouts, layouts
    assert {"LG001", "LG101", "LG105", "LG201", "LG301"} <= codes, codes


@needs_dask
def test_engine_dask_alone_starts_a_local_cluster_of_the_workers_asked_for(tmp_path):
    data = masks(tmp_path / "masks", 60)
    seen = []
    report = audit(data, SPEC, use_project_config=False, cache=False, engine="dask", workers=2,
                   progress=lambda done, total: seen.append((done, total)))
    local = audit(data, SPEC, use_project_config=False, cache=False, workers=1)
    assert "the per-file work ran on a local Dask cluster: 2 workers, 2 threads" in report.notes
    assert without_engine_note(report.to_dict()) == without_engine_note(local.to_dict())
    assert len(report.findings) == 9
    assert seen[-1] == (60, 60) and [done for done, _ in seen] == sorted(done for done, _ in seen)


@needs_dask
def test_workers_asked_for_an_existing_cluster_are_said_to_be_unused(client, tmp_path):
    report = audit(masks(tmp_path / "masks", 4), SPEC, use_project_config=False, cache=False, client=client,
                   workers=4)
    assert "4 workers asked for were not used: the Dask cluster's own workers ran the audit" in report.notes


@needs_dask
def test_a_stream_of_tasks_is_batched_for_every_thread(client, tmp_path):
    """Discovery hands the engine an iterator of unknown length: a dataset smaller than a full
    batch per thread is still split so that both workers get work, and each task runs once."""
    from labelguard.core.dask_engine import DaskEngine

    tasks = list(discover(str(masks(tmp_path / "masks", 40)), AuditOptions(format="masks")).tasks)
    pairs = list(DaskEngine(client, "a test cluster").run(iter(tasks), SPEC))
    assert len(pairs) >= 2
    assert sorted(t.path for batch, _ in pairs for t in batch) == sorted(t.path for t in tasks)
    assert sum(result.files for _, result in pairs) == len(tasks)


# ---- lost workers ---------------------------------------------------------------------------

@needs_dask
def test_a_worker_killed_mid_audit_loses_and_duplicates_nothing(client, tmp_path):
    from labelguard.core.dask_engine import DaskEngine

    folder = masks(tmp_path / "masks", 200)
    write_png(folder / "flaky.png", organic_mask((24, 20), classes=(0, 1, 7), seed=99))
    tasks = discover(str(folder), AuditOptions(format="masks")).tasks
    serial = merged_results(run_tasks(tasks, SPEC, 1))

    on_dask = merged_results(result for _, result in DaskEngine(client, "a test cluster").run(fragile(tasks), SPEC))

    assert (folder / "flaky.died").exists()  # the worker checking it really was killed
    assert on_dask.errors == []
    assert on_dask.files == serial.files == len(tasks)
    assert [f.to_dict() for f in on_dask.findings] == [f.to_dict() for f in serial.findings]
    assert on_dask.summary.to_dict() == serial.summary.to_dict()
    assert "flaky.png" in {Path(f.path).name for f in on_dask.findings if f.code == "LG201"}


@needs_dask
def test_a_file_that_kills_every_worker_is_an_error_naming_it_and_the_rest_is_kept(client, tmp_path):
    from labelguard.core.dask_engine import DaskEngine

    folder = masks(tmp_path / "masks", 100)
    write_png(folder / "kill.png", organic_mask((24, 20), classes=(0, 1, 2), seed=7))
    tasks = discover(str(folder), AuditOptions(format="masks")).tasks
    scheduler = client.cluster.scheduler
    retries, scheduler.allowed_failures = scheduler.allowed_failures, 0  # no retry: two deaths, not eight
    try:
        on_dask = merged_results(result for _, result in DaskEngine(client, "a test cluster").run(fragile(tasks), SPEC))
    finally:
        scheduler.allowed_failures = retries
    client.wait_for_workers(2, timeout=60)

    expected = merged_results(run_tasks([t for t in tasks if not t.path.endswith("kill.png")], SPEC, 1))
    (error,) = on_dask.errors
    assert error.startswith(f"{folder / 'kill.png'}: the worker process checking this file died"), error
    assert on_dask.files == len(tasks)
    assert [f.to_dict() for f in on_dask.findings] == [f.to_dict() for f in expected.findings]


@needs_dask
@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs /proc to see the cluster's processes")
def test_ctrl_c_mid_audit_exits_130_without_tracebacks_and_stops_the_local_cluster(tmp_path):
    folder = tmp_path / "data" / "masks"  # enough to take the cluster some seconds
    for index in range(1500):
        write_png(folder / f"{index:04d}.png", organic_mask((96, 96), classes=(0, 1, 2), seed=index % 40))
    process = subprocess.Popen([sys.executable, "-m", "labelguard", "audit", "data", "--num-classes", "3",
                                "--engine", "dask", "--workers", "2", "--no-config", "--no-cache", "--no-progress"],
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    helper = _cluster_helper(process.pid)
    os.killpg(process.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the audit's process group
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, (out, err)
    assert err == "labelguard: interrupted\n"
    deadline = time.monotonic() + 60
    while Path(f"/proc/{helper}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(f"/proc/{helper}").exists(), "the local cluster outlived the audit"


def _cluster_helper(audit: int, seconds: float = 120) -> int:
    """The pid of the process that runs the audit's local cluster, once its two workers have
    started."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for pid in _children(audit):
            try:
                helper = b"serve_local_cluster" in Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            workers = [child for child in _children(pid) if b"spawn_main" in _command(child)]
            if helper and len(workers) == 2:
                return pid
        time.sleep(0.1)
    raise AssertionError(f"no local cluster with workers under process {audit} after {seconds} s")


def _children(pid: int) -> list[int]:
    """The child processes of ``pid``, whichever of its threads started them."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def _command(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


# ---- the result cache ---------------------------------------------------------------------

@needs_dask
def test_the_workers_refuse_a_mask_that_links_out_of_the_data(client, tmp_path):
    """The roots the audit was given travel with each batch: a worker refuses a link that leads
    out of them (LG005, never read) as the local engine does."""
    data = masks(tmp_path / "ds", 6)
    outside = organic_mask((8, 8))
    outside[:] = 9
    write_png(tmp_path / "elsewhere" / "x.png", outside)
    (data / "linked.png").symlink_to("../elsewhere/x.png")
    report = audit(str(data), SPEC, client=client, use_project_config=False, cache=False)
    [refused] = [f for f in report.findings if f.path and f.path.endswith("linked.png")]
    assert refused.code == "LG005" and "outside the audited data" in refused.message


@needs_dask
def test_the_workers_share_the_result_cache_and_count_what_came_from_it(client, tmp_path):
    data = masks_dataset(tmp_path / "data", count=40, bad=3)
    cache = str(tmp_path / "cache")

    first = audit(data, SPEC, use_project_config=False, cache=cache, client=client)
    second = audit(data, SPEC, use_project_config=False, cache=cache, client=client)
    write_png(data / "m5.png", organic_mask((32, 32), classes=(0, 1, 8), seed=5))
    edited = audit(data, SPEC, use_project_config=False, cache=cache, client=client)
    age(data)
    local = audit(data, SPEC, use_project_config=False, cache=cache, workers=1)

    assert (first.from_cache, second.from_cache, edited.from_cache) == (0, 40, 39)
    assert [f.to_dict() for f in second.findings] == [f.to_dict() for f in first.findings]
    assert sorted(Path(f.path).name for f in edited.findings) == ["m3.png", "m5.png"]
    # The same absolute paths: the local engine reads what the workers stored.
    assert local.from_cache == 39  # m5.png was too fresh to be stored by the audit after the edit
    assert [f.to_dict() for f in local.findings] == [f.to_dict() for f in edited.findings]


# ---- a cluster of separate processes, through the command line ---------------------------

def _start(command: list[str], cwd: Path, log: Path, pythonpath: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=pythonpath)
    return subprocess.Popen(command, cwd=cwd, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def _stop(processes: list[subprocess.Popen]) -> None:
    """SIGTERM, then SIGKILL, to each process group started here (a worker's nanny and its worker)."""
    for process in processes:
        with_group(process, signal.SIGTERM)
    deadline = time.monotonic() + 20
    for process in processes:
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
        with_group(process, signal.SIGKILL)
        process.wait()


def with_group(process: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        pass


def _scheduler_address(path: Path, processes: list[subprocess.Popen], seconds: float = 60) -> str:
    """The address the scheduler writes to its ``--scheduler-file`` (once the file is whole)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return json.loads(path.read_text())["address"]
        except (OSError, ValueError, KeyError):
            assert all(p.poll() is None for p in processes), "the scheduler ended at start"
            assert time.monotonic() < deadline, f"no address in {path} after {seconds} s"
            time.sleep(0.1)


def _audit_json(args: list[str], cwd: Path) -> tuple[int, dict, str]:
    done = subprocess.run([sys.executable, "-m", "labelguard", "audit", *args, "--no-config", "--no-progress",
                           "--no-cache", "--output-format", "json"], cwd=cwd, capture_output=True, text=True,
                          timeout=240)
    return done.returncode, json.loads(done.stdout) if done.stdout.strip() else {}, done.stderr


@needs_dask
def test_a_scheduler_and_two_worker_processes_audit_through_the_command_line(tmp_path):
    data = masks(tmp_path / "data" / "masks", 120)
    (data / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n broken")
    elsewhere = tmp_path / "workers"  # the workers' working folder is not the audit's
    elsewhere.mkdir()
    address_file = tmp_path / "scheduler.json"
    dask = [sys.executable, "-m", "dask"]
    processes = []
    try:
        processes.append(_start([*dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--dashboard-address",
                                 "127.0.0.1:0", "--scheduler-file", str(address_file)],
                                elsewhere, tmp_path / "scheduler.log", SRC))
        address = _scheduler_address(address_file, processes)
        for index in range(2):
            processes.append(_start([*dask, "worker", address, "--nworkers", "1", "--nthreads", "1", "--host",
                                     "127.0.0.1", "--dashboard-address", "127.0.0.1:0"],
                                    elsewhere, tmp_path / f"worker{index}.log", SRC))

        rc, report, err = _audit_json(["data", "--num-classes", "3", "--engine", "dask", "--scheduler", address],
                                      tmp_path)
        local_rc, local, _ = _audit_json(["data", "--num-classes", "3"], tmp_path)

        assert (rc, local_rc) == (1, 1), err
        assert "Traceback" not in err and err.strip() == "", err
        assert f"the per-file work ran on the Dask cluster at {address}: 2 workers, 2 threads" \
            in report["summary"]["notes"]
        assert without_engine_note(report) == without_engine_note(local)
        assert {f["code"] for f in report["findings"]} == {"LG001", "LG201"}
        assert report["findings"][0]["path"].startswith("data/masks/")

        # A third worker that cannot import labelguard: the audit refuses the cluster.
        blocked = tmp_path / "blocked" / "labelguard"
        blocked.mkdir(parents=True)
        (blocked / "__init__.py").write_text("raise ImportError(\"No module named 'labelguard'\")\n")
        processes.append(_start([*dask, "worker", address, "--nworkers", "1", "--nthreads", "1", "--host",
                                 "127.0.0.1", "--dashboard-address", "127.0.0.1:0"], elsewhere,
                                tmp_path / "worker-without.log", os.pathsep.join([str(blocked.parent), SRC])))
        _wait_for_workers(address, 3)
        rc, _, err = _audit_json(["data", "--num-classes", "3", "--engine", "dask", "--scheduler", address], tmp_path)
        assert rc == 2, err
        assert f"labelguard: error: the workers of the Dask cluster at {address} cannot run labelguard" in err
        assert "Traceback" not in err
    finally:
        _stop(processes)


def _wait_for_workers(address: str, count: int) -> None:
    from distributed import Client

    with Client(address, timeout=30, set_as_default=False) as connected:
        connected.wait_for_workers(count, timeout=60)


# ---- a cluster that cannot run the audit ---------------------------------------------------

@needs_dask
def test_an_unreachable_scheduler_is_an_error_naming_its_address(tmp_path, monkeypatch):
    import socket

    from labelguard.core import dask_engine

    monkeypatch.setattr(dask_engine, "CONNECT_SECONDS", 1)
    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    data = masks(tmp_path / "masks", 3)
    with pytest.raises(ClusterError, match=f"cannot reach the Dask scheduler at tcp://127.0.0.1:{port} within 1 s"):
        audit(data, SPEC, use_project_config=False, engine="dask", scheduler=f"tcp://127.0.0.1:{port}")


@needs_dask
def test_a_cluster_without_workers_is_an_error_once_the_wait_is_over(tmp_path, monkeypatch):
    from distributed import Client, LocalCluster

    from labelguard.core import dask_engine

    monkeypatch.setattr(dask_engine, "WORKER_WAIT_SECONDS", 1)
    data = masks(tmp_path / "masks", 3)
    with LocalCluster(n_workers=0, processes=False, dashboard_address="127.0.0.1:0",
                      silence_logs=logging.CRITICAL) as cluster, Client(cluster, set_as_default=False) as empty:
        with pytest.raises(ClusterError, match="has no worker after 1 s; start some with `dask worker "):
            audit(data, SPEC, use_project_config=False, client=empty)


@needs_dask
def test_workers_of_another_labelguard_version_are_an_error_naming_them(client, tmp_path, monkeypatch):
    from labelguard.core import dask_engine

    # This process says it is another version; the worker processes report their own.
    monkeypatch.setattr(dask_engine, "__version__", "0.0.1")
    with pytest.raises(ClusterError, match=rf"run another labelguard than this 0.0.1: tcp://127.0.0.1:\d+ has "
                                           rf"{labelguard.__version__}"):
        audit(masks(tmp_path / "masks", 2), SPEC, use_project_config=False, cache=False, client=client)


# ---- asking for the engine ---------------------------------------------------------------

def test_a_scheduler_without_engine_dask_is_a_usage_error(tmp_path):
    masks(tmp_path / "masks", 2)
    runner = CliRunner()
    for extra in ([], ["--engine", "local"]):
        result = runner.invoke(main, ["audit", str(tmp_path / "masks"), "--scheduler", "tcp://127.0.0.1:8786",
                                      "--no-config", *extra])
        assert result.exit_code == 2, result.output
        assert "--scheduler tcp://127.0.0.1:8786 is the address of a Dask cluster, and the engine is local" \
            in result.output
    result = runner.invoke(main, ["audit", str(tmp_path / "masks"), "--engine", "dask", "--scheduler",
                                  "tcp://127.0.0.1:8786", "--workers", "2", "--no-config"])
    assert result.exit_code == 2 and "with --scheduler the cluster's own workers run the audit" in result.output


def test_the_config_chooses_the_engine_and_a_wrong_value_names_its_key(tmp_path):
    masks(tmp_path / "data" / "masks", 2)
    config = tmp_path / "data" / "labelguard.toml"
    config.write_text('[audit]\nengine = "spark"\n')
    with pytest.raises(SpecError, match=r'audit.engine in .*labelguard.toml must be "local" or "dask", got \'spark\''):
        audit(tmp_path / "data", SPEC)
    config.write_text('[audit]\nscheduler = "tcp://127.0.0.1:8786"\n')
    with pytest.raises(UsageError, match=r'\[audit\] scheduler = \'tcp://127.0.0.1:8786\' in the config needs '
                                         r'engine = "dask"'):
        audit(tmp_path / "data", SPEC, config_file=str(config))
    config.write_text('[audit]\nengine = "dask"\nscheduler = "tcp://127.0.0.1:8786"\n')
    # the caller's engine wins
    report = audit(tmp_path / "data", SPEC, engine="local", cache=False, config_file=str(config))
    assert "[audit] scheduler tcp://127.0.0.1:8786 of the config was not used: the engine is local" in report.notes


def test_the_api_refuses_a_client_for_the_local_engine_and_an_unknown_engine(tmp_path):
    data = masks(tmp_path / "masks", 2)
    with pytest.raises(UsageError, match="unknown engine 'ray'; known: local, dask"):
        audit(data, SPEC, engine="ray")
    with pytest.raises(UsageError, match="a Dask client was given with engine 'local'"):
        audit(data, SPEC, engine="local", client=object())
    with pytest.raises(UsageError, match="a Dask client and a scheduler address"):
        audit(data, SPEC, client=object(), scheduler="tcp://127.0.0.1:8786")


def test_engine_dask_without_the_extra_is_exit_2_naming_it(tmp_path):
    masks(tmp_path / "data" / "masks", 2)
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / "dask.py").write_text("raise ImportError(\"No module named 'dask'\")\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(blocked), SRC]))
    done = subprocess.run([sys.executable, "-m", "labelguard", "audit", "data", "--engine", "dask", "--no-config",
                           "--no-progress"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "pip install 'labelguard[dask]'" in done.stderr
    assert "Traceback" not in done.stderr
