"""A layout is one module of ``labelguard.layouts``, found by the package itself: importing the
package registers every layout, each module registers the one layout it declares, and a
module dropped into the package is found without being listed anywhere."""

from __future__ import annotations

import ast
import json
import os
import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path

import labelguard
import labelguard.layouts
from labelguard.layouts import INFRASTRUCTURE

PACKAGE = Path(labelguard.layouts.__file__).parent

# Prints, in a fresh interpreter, each registered layout's module and the modules imported.
REGISTRY = """
import json, sys
import labelguard.layouts
LAYOUTS = labelguard.layouts.LAYOUTS
print(json.dumps({"layouts": {name: layout.discover.__module__ for name, layout in LAYOUTS.items()},
                  "file": labelguard.layouts.__file__, "modules": sorted(sys.modules),
                  "example": LAYOUTS["example"].detect(".", None).confidence if "example" in LAYOUTS else None}))
"""


def registry_of_a_fresh_process(pythonpath: Path | None = None) -> dict:
    env = None
    if pythonpath is not None:
        paths = filter(None, [str(pythonpath), os.environ.get("PYTHONPATH")])
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths))
    done = subprocess.run([sys.executable, "-c", REGISTRY], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def declared_layouts(path: Path) -> list[str]:
    """The names a module's source registers: the first argument of each register_layout call."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [node.args[0].value for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "register_layout"
            and node.args and isinstance(node.args[0], ast.Constant)]


def source_of(name: str) -> Path:
    """The source of the layout module ``name``: ``<name>.py``, or a package's ``__init__.py``."""
    return PACKAGE / name / "__init__.py" if (PACKAGE / name).is_dir() else PACKAGE / f"{name}.py"


def test_each_layout_module_registers_the_one_layout_it_declares_when_the_package_is_imported():
    modules = [m.name for m in pkgutil.iter_modules([str(PACKAGE)])]
    declared = {name: declared_layouts(source_of(name)) for name in modules}
    layout_modules = {name for name in modules if not name.startswith("_") and name not in INFRASTRUCTURE}
    assert {name for name, found in declared.items() if found} == layout_modules, \
        "a module that registers a layout is private or infrastructure, or a layout module registers none"
    assert {name: len(found) for name, found in declared.items() if found} == dict.fromkeys(layout_modules, 1)
    registered = registry_of_a_fresh_process()["layouts"]
    assert registered == {found[0]: f"labelguard.layouts.{name}" for name, found in declared.items() if found}


def test_a_layout_module_dropped_into_the_package_is_registered_and_private_modules_are_not_imported(tmp_path):
    copy = tmp_path / "labelguard"
    shutil.copytree(Path(labelguard.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "layouts" / "example.py").write_text(
        "from labelguard.layouts.base import NAMES, Discovery, Seen, evidence, register_layout\n\n\n"
        "def discover_example(root, options):\n"
        "    return Discovery('example', root)\n\n\n"
        "discover_example.detect = lambda root, options: evidence(0.01, Seen('an example', NAMES))\n"
        "register_layout('example', 'an example layout', 0.01)(discover_example)\n", encoding="utf-8")
    # Private modules serve the layouts that import them; the package never imports one itself.
    (copy / "layouts" / "_example_helpers.py").write_text("raise ImportError('imported by the package')\n",
                                                          encoding="utf-8")
    found = registry_of_a_fresh_process(tmp_path)
    assert Path(found["file"]).parent == copy / "layouts"
    assert found["layouts"]["example"] == "labelguard.layouts.example"
    assert set(found["layouts"]) == set(labelguard.layouts.LAYOUTS) | {"example"}
    assert "labelguard.layouts._example_helpers" not in found["modules"]
    assert 0 < found["example"] <= 0.01  # its detect gives evidence as CONTRIBUTING says to write it


def test_importing_every_layout_loads_no_image_plugin_and_no_optional_reader():
    """Detection and discovery need no decoder: Pillow's format plugins, pyarrow, h5py and the
    other optional readers are imported by the files that need them, never by the layouts."""
    modules = registry_of_a_fresh_process()["modules"]
    optional = ("pyarrow", "h5py", "nibabel", "tifffile", "dask", "torch", "pandas", "fsspec", "datasets")
    assert [m for m in modules if m.split(".")[0] in optional] == []
    assert [m for m in modules if m.startswith("PIL.") and m.endswith("ImagePlugin")] == []


def test_each_annotation_format_has_one_home_holding_its_reader_record_builder_and_editor():
    """A registered annotation format's processor, parser and editor are modules of its
    layout's package, and nothing else registers a format."""
    from labelguard.layouts.formats import ANNOTATION_FORMATS

    assert {f.name for f in ANNOTATION_FORMATS} == {"coco", "csv", "voc", "yolo"}
    for found in ANNOTATION_FORMATS:
        home = found.processor.__module__.rsplit(".", 1)[0]
        assert found.processor.__module__ == f"{home}.record", found.name
        folder = PACKAGE / home.rsplit(".", 1)[1]
        assert (folder / "reader.py").is_file() and (folder / "__init__.py").is_file(), found.name
        for planner in (found.rename, found.remap):
            assert planner is None or planner.__module__ == f"{home}.editor", (found.name, planner)
        registers = ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))
        assert any(isinstance(node, ast.Call) and getattr(node.func, "id", "") == "register_format"
                   for node in ast.walk(registers)), found.name
        record = ast.parse((folder / "record.py").read_text(encoding="utf-8"))
        assert any(isinstance(node, ast.ImportFrom) and node.names
                   and (node.module == f"{home}.reader" or (node.level == 1 and node.module == "reader"))
                   for node in ast.walk(record)), f"{found.name}: record.py does not import from {home}.reader"
    registering = sorted(p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")
                         if p.name != "formats.py" and "register_format(" in p.read_text(encoding="utf-8"))
    assert registering == ["coco/__init__.py", "tables/__init__.py", "voc/__init__.py", "yolo/__init__.py"]
