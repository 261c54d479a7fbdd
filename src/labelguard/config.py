"""Project configuration: ``labelguard.toml`` or ``[tool.labelguard]`` in ``pyproject.toml``.

Layered like a linter's config, lowest to highest priority: the dataset's own metadata,
the project config found by walking up from the data, ``--config FILE``, then CLI flags.
An unknown key is an error that names it.

Example ``labelguard.toml``::

    [labels]
    num_classes = 3
    classes = ["background", "liver", "tumour"]
    ignore_index = [255]

    [audit]
    fail_on = "error"
    max_pixels = 2_147_483_648       # elements of one array a file may declare
    max_file_bytes = 4_294_967_296   # bytes one file may be read or decoded into
    cache_dir = ".labelguard-cache"  # per-file results cached by content (default: the user's cache)
    cache_max_bytes = 1_073_741_824  # the cache is swept back under this size
    engine = "dask"                  # per-file work on a Dask cluster (default: "local")
    scheduler = "tcp://head:8786"    # that cluster's scheduler (default: a LocalCluster)

    [severity]
    LG205 = "warning"

    [tokens]                          # tokenized text: what the model's tables take
    model_config = "model/config.json"   # or the model folder; relative to this file
    tokenizer = "model/tokenizer.json"
    # max_position_embeddings = 512, num_labels = 3 ... override what the files say
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field, replace
from typing import Any

from labelguard.core import storage
from labelguard.core.findings import Severity
from labelguard.core.registry import REGISTRY
from labelguard.core.spec import LabelSpec
from labelguard.errors import SpecError
from labelguard.readers.base import ReadError, read_text

CONFIG_NAME = "labelguard.toml"
AUDIT_KEYS = {"fail_on", "workers", "format", "key", "sample", "color_map", "max_pixels", "max_file_bytes",
              "cache", "cache_dir", "cache_max_bytes", "engine", "scheduler"}
TOP_KEYS = {"labels", "audit", "severity", "tokens"}


@dataclass
class Config:
    """A parsed config file."""

    path: str | None = None
    spec: LabelSpec = field(default_factory=LabelSpec)
    audit: dict[str, Any] = field(default_factory=dict)
    severity: dict[str, Severity] = field(default_factory=dict)


def find_project_config(start: str) -> str | None:
    """The nearest labelguard.toml, or pyproject.toml with [tool.labelguard], at or above ``start``
    (for data in object storage, a URL: at or above the current folder, the project that audits it)."""
    if storage.url_scheme(start):
        start = os.getcwd()
    current = os.path.abspath(start if os.path.isdir(start) else os.path.dirname(os.path.abspath(start)))
    while True:
        candidate = os.path.join(current, CONFIG_NAME)
        if os.path.isfile(candidate):
            return candidate
        pyproject = os.path.join(current, "pyproject.toml")
        if os.path.isfile(pyproject) and _has_tool_table(pyproject):
            return pyproject
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def toml_parser():
    """The TOML parser module, imported when a file is read: most audits find no config file,
    and tomllib compiles its expressions on import (some 2 ms of the start-up)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib
    return tomllib


def _has_tool_table(path: str) -> bool:
    tomllib = toml_parser()
    try:
        return "labelguard" in tomllib.loads(read_text(path)).get("tool", {})
    except (ReadError, tomllib.TOMLDecodeError):
        return False


def load_config(path: str) -> Config:
    """Parse a config file; SpecError naming the file and key when it is invalid."""
    tomllib = toml_parser()
    try:
        data = tomllib.loads(read_text(path))
    except ReadError as exc:
        raise SpecError(f"cannot read config {path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"invalid TOML in {path}: {exc}") from None
    if os.path.basename(path) == "pyproject.toml":
        data = data.get("tool", {}).get("labelguard", {})
    return parse_config(data, path)


def parse_config(data: dict[str, Any], path: str) -> Config:
    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        raise SpecError(f"unknown config key {', '.join(unknown)} in {path}; known tables: "
                        f"{', '.join(sorted(TOP_KEYS))}")
    config = Config(path=path)
    labels = data.get("labels", {})
    if not isinstance(labels, dict):
        raise SpecError(f"[labels] in {path} must be a table")
    config.spec = LabelSpec.from_mapping(labels, source=path) if labels else LabelSpec()
    tokens = data.get("tokens", {})
    if not isinstance(tokens, dict):
        raise SpecError(f"[tokens] in {path} must be a table")
    if tokens:
        config.spec = replace(config.spec, tokens=_token_spec(tokens, path))
    audit = data.get("audit", {})
    unknown = sorted(set(audit) - AUDIT_KEYS)
    if unknown:
        raise SpecError(f"unknown key {', '.join('audit.' + k for k in unknown)} in {path}; known: "
                        f"{', '.join(sorted(AUDIT_KEYS))}")
    config.audit = {key: _audit_value(key, value, path) for key, value in audit.items()}
    for code, level in data.get("severity", {}).items():
        known = known_code(code, f"[severity] of {path}")
        try:
            config.severity[known] = Severity.parse(level)
        except ValueError as exc:
            raise SpecError(f"{exc} for {code} in {path}") from None
    return config


def _token_spec(table: dict[str, Any], path: str):
    """The token spec of a ``[tokens]`` table: the model config and tokenizer it names
    (relative to the config file), with the numbers it gives over what they say."""
    from labelguard.core.tokens import FILE_KEYS, TokenSpec
    from labelguard.readers.tokens import token_spec_from_files

    files = {key: table[key] for key in FILE_KEYS if key in table}
    for key, value in files.items():
        if not isinstance(value, str) or not value:
            raise SpecError(f"tokens.{key} in {path} must be a path, got {value!r}")
    numbers = TokenSpec.from_mapping({k: v for k, v in table.items() if k not in FILE_KEYS}, source=path)
    found = token_spec_from_files(files.get("model_config"), files.get("tokenizer"),
                                  relative_to=os.path.dirname(os.path.abspath(path)))
    return numbers if found is None else found.merged(numbers)


def _audit_value(key: str, value: Any, path: str) -> Any:
    """An ``[audit]`` value checked for its type; SpecError naming the key and the file."""
    where = f"audit.{key} in {path}"
    if key == "cache":
        if not isinstance(value, bool):
            raise SpecError(f"{where} must be true or false, got {value!r}")
        return value
    if key == "cache_dir" and isinstance(value, str) and value:
        # Relative to the config file, whichever folder the audit runs from.
        return os.path.join(os.path.dirname(os.path.abspath(path)), os.path.expanduser(value))
    if key in ("workers", "sample", "max_pixels", "max_file_bytes", "cache_max_bytes"):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise SpecError(f"{where} must be a whole number >= 1, got {value!r}")
        return value
    if key == "engine":
        if value not in ("local", "dask"):
            raise SpecError(f"{where} must be \"local\" or \"dask\", got {value!r}")
        return value
    if key == "fail_on":
        if not isinstance(value, str) or value.strip().lower() not in ("error", "warning", "info", "never"):
            raise SpecError(f"{where} must be one of error, warning, info, never; got {value!r}")
        return value
    if not isinstance(value, str) or not value:
        raise SpecError(f"{where} must be a non-empty string, got {value!r}")
    return value


def known_code(code: str, where: str) -> str:
    """``code`` as registered (upper case); SpecError naming it, ``where`` it was written and
    the codes of its family (or the families, when it is in none) otherwise."""
    import labelguard.checks  # noqa: F401  (registers every code)

    normal = code.strip().upper()
    if normal in REGISTRY:
        return normal
    family = normal[:3] + "xx"
    members = sorted(c for c in REGISTRY if REGISTRY[c].family == family) if len(normal) == 5 else []
    if members:
        known = f"the {family} family has {', '.join(members)}"
    else:
        known = "no family matches; the families are " + ", ".join(sorted({c.family for c in REGISTRY.values()}))
    raise SpecError(f"unknown check code {code!r} in {where}: {known} (`labelguard rules` lists every code)")


def format_config(spec: LabelSpec, comments: list[str] | None = None) -> str:
    """A labelguard.toml holding ``spec``, with ``comments`` (found values and counts) above it."""
    lines = ["# labelguard label spec: `labelguard audit` checks data against it.",
             "# Written by `labelguard init`; edit it to say what the labels must be."]
    for comment in comments or []:
        lines.append(f"# {comment}")
    lines.append("")
    lines.append("[labels]")
    data = spec.to_dict()
    for key in ("classes", "values", "num_classes", "ignore_index", "background", "reduce_zero_label"):
        if key not in data or data[key] is None:
            continue
        lines.append(f"{key} = {_toml_value(data[key])}")
    return "\n".join(lines) + "\n"


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        return f'"{escaped}"'
    return str(value)
