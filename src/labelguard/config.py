"""Project configuration: ``labelguard.toml`` or ``[tool.labelguard]`` in ``pyproject.toml``.

Layered like a linter's config, lowest to highest priority: the dataset's own metadata,
the project config found by walking up from the data, ``--config FILE``, then CLI flags.
An unknown key is an error that names it.

A config found by walking up from the data is data (the trust model of docs/security.md):
anyone who ships or shares the data may have written it. It sets what a dataset's author
knows, its ``[labels]``, its ``[tokens]`` (files in its own folder only) and the layout hints
``[audit]`` ``format``, ``key`` and ``color_map`` (a file in its own folder); every other
setting, which would decide where code runs, how strict the verdict is or what is read and
written outside the data, is refused with a warning. ``--config FILE`` is the user's own:
all of it applies. :func:`within_trust` draws that line, for every caller.

Example ``labelguard.toml``::

    [labels]
    num_classes = 3
    classes = ["background", "liver", "tumour"]
    ignore_index = [255]

    [audit]                           # with --config FILE (a found config sets format, key, color_map only)
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
import re
import sys
from dataclasses import dataclass, field, replace
from typing import Any

from labelguard.core import storage
from labelguard.core.findings import Severity
from labelguard.core.paths import resolves_inside
from labelguard.core.registry import REGISTRY
from labelguard.core.spec import LabelSpec
from labelguard.core.text import UNSAFE_CHARACTERS, clipped, printable, show_name, verb
from labelguard.errors import SpecError
from labelguard.readers.base import ReadError, read_text

CONFIG_NAME = "labelguard.toml"
AUDIT_KEYS = {"fail_on", "workers", "format", "key", "sample", "color_map", "max_pixels", "max_file_bytes",
              "cache", "cache_dir", "cache_max_bytes", "engine", "scheduler"}
TOP_KEYS = {"labels", "audit", "severity", "tokens"}
# What a config found with the data may set beside [labels] and [tokens]: how the dataset's
# files are laid out, which its author knows. The other [audit] keys and [severity] decide where
# code runs (engine, scheduler, workers), how strict the verdict is (fail_on, severities,
# sample), and what is read and written outside the data (cache, read limits).
DATA_AUDIT_KEYS = ("format", "key", "color_map")
# Why a found config's engine, fail_on, [severity]... are refused (ConfigUse.warnings says it).
NOT_DATA = "not a setting of the data"
# The flag that makes each setting a found config may not make, for its warning to name.
FLAGS = {"audit.engine": "--engine", "audit.scheduler": "--scheduler", "audit.workers": "--workers",
         "audit.sample": "--sample", "audit.fail_on": "--fail-on", "audit.cache": "--no-cache",
         "audit.cache_dir": "--cache-dir", "audit.max_pixels": "--max-pixels",
         "audit.max_file_bytes": "--max-file-bytes", "severity": "--severity CODE=LEVEL"}


@dataclass
class Config:
    """A parsed config file.

    Attributes:
        trusted: given by the user (``--config``); False for a config found with the data.
        applied: the settings it made, as ``table.key`` (``labels.num_classes``), in file order.
        refused: (setting, why) of each setting it may not make (:func:`within_trust`).
    """

    path: str | None = None
    spec: LabelSpec = field(default_factory=LabelSpec)
    audit: dict[str, Any] = field(default_factory=dict)
    severity: dict[str, Severity] = field(default_factory=dict)
    tokens: dict[str, Any] = field(default_factory=dict)  # the [tokens] table, its files not yet read
    trusted: bool = True
    applied: tuple[str, ...] = ()
    refused: tuple[tuple[str, str], ...] = ()

    @property
    def use(self) -> "ConfigUse":
        """What it decided, for the report."""
        return ConfigUse(self.path or "", self.trusted, self.applied, self.refused)


@dataclass(frozen=True)
class ConfigUse:
    """What one config file decided in an audit, as the report names it."""

    path: str
    trusted: bool
    applied: tuple[str, ...] = ()
    refused: tuple[tuple[str, str], ...] = ()  # (setting, why it was not applied)

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "trusted": self.trusted, "applied": list(self.applied),
                "refused": [setting for setting, _ in self.refused]}

    def describe(self) -> str:
        """One line: the file, its trust, what it set and what it was refused."""
        how = "given with --config" if self.trusted else "found with the data"
        text = f"{self.path} ({how}): applied {', '.join(self.applied) or 'nothing'}"
        if self.refused:
            text += f"; not applied: {', '.join(setting for setting, _ in self.refused)}"
        return text

    def warnings(self) -> list[str]:
        """A warning for each refusal: the settings a found config may not make, together,
        then each file it names outside its folder."""
        kinds = [setting for setting, why in self.refused if why == NOT_DATA]
        warnings = []
        if kinds:
            flags = [flag for flag in dict.fromkeys(FLAGS.get(setting, FLAGS.get(setting.partition(".")[0]))
                                                    for setting in kinds) if flag]
            given = f" or give {', '.join(flags)}" if flags else ""
            warnings.append(f"{self.path} was found with the data, so it is data: it may set the label spec "
                            f"([labels], [tokens]) and layout hints ([audit] {', '.join(DATA_AUDIT_KEYS)}), "
                            f"not {', '.join(kinds)}, which {verb(len(kinds), 'was')} not applied; to apply "
                            f"{'it' if len(kinds) == 1 else 'them'}, pass the file with --config {self.path} "
                            f"(config_file= from Python){given}")
        warnings.extend(f"{self.path}: {why}" for _, why in self.refused if why != NOT_DATA)
        return warnings


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
    except (ReadError, tomllib.TOMLDecodeError, RecursionError):
        return False


def load_config(path: str, found: bool = False) -> Config:
    """Parse a config file and keep what it may set (:func:`within_trust`): all of it when the
    user gave it, less when it was ``found`` with the data; SpecError naming the file and key
    when it is invalid."""
    tomllib = toml_parser()
    try:
        data = tomllib.loads(read_text(path))
    except ReadError as exc:
        raise SpecError(f"cannot read config {path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"invalid TOML in {path}: {exc}") from None
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise SpecError(f"invalid TOML in {path}: arrays or inline tables nest too deep to parse (past "
                        "Python's recursion limit); a labelguard config nests a few levels") from None
    if os.path.basename(path) == "pyproject.toml":
        data = data.get("tool", {}).get("labelguard", {})
    return within_trust(parse_config(data, path), found)


def parse_config(data: dict[str, Any], path: str) -> Config:
    """The settings of a config file's tables, each checked (SpecError naming the key and the
    file), its [tokens] files not yet read: :func:`within_trust` decides which apply."""
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
    config.tokens = _token_table(tokens, path)
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
    config.applied = (*(f"labels.{key}" for key in labels), *(f"tokens.{key}" for key in tokens),
                      *(f"audit.{key}" for key in audit), *(f"severity.{code}" for code in config.severity))
    return config


def within_trust(config: Config, found: bool) -> Config:
    """``config`` with only the settings its trust lets it make, and its [tokens] files read.

    A config given by the user (``found`` False: ``--config``, ``config_file=``) makes them
    all. One ``found`` by walking up from the data is data: it sets [labels], [tokens] and
    the [audit] layout hints (:data:`DATA_AUDIT_KEYS`), and the files it names (tokens.*,
    audit.color_map) must lie in its own folder, links resolved; every other setting is
    refused, in ``refused`` with why, for the report to warn of."""
    from labelguard.core.tokens import FILE_KEYS

    if not found:
        return replace(config, spec=_with_tokens(config.spec, config.tokens, config.path), trusted=True)
    folder = os.path.dirname(os.path.abspath(config.path))
    refused = [(setting, NOT_DATA) for setting in config.applied if not _data_may_set(setting)]
    audit = {key: value for key, value in config.audit.items() if key in DATA_AUDIT_KEYS}
    tokens = dict(config.tokens)
    # (table, key, the path as written, the file it names)
    named = [(tokens, key, tokens[key], os.path.join(folder, tokens[key])) for key in FILE_KEYS if key in tokens]
    if "color_map" in audit:
        named.append((audit, "color_map", audit["color_map"], audit["color_map"]))
    for table, key, value, path in named:
        if not resolves_inside(path, folder):
            setting = f"{'tokens' if table is tokens else 'audit'}.{key}"
            refused.append((setting, f"{setting} = {clipped(repr(value))} names a file outside the config's folder "
                                     "(a config found with the data names files in its own folder only): not read"))
            del table[key]
    dropped = {setting for setting, _ in refused}
    return replace(config, spec=_with_tokens(config.spec, tokens, config.path), audit=audit, severity={},
                   trusted=False, applied=tuple(s for s in config.applied if s not in dropped),
                   refused=tuple(refused))


def _data_may_set(setting: str) -> bool:
    """Whether a config found with the data may make ``setting`` (``table.key``)."""
    table, _, key = setting.partition(".")
    return table in ("labels", "tokens") or (table == "audit" and key in DATA_AUDIT_KEYS)


def _token_table(table: dict[str, Any], path: str) -> dict[str, Any]:
    """A ``[tokens]`` table checked: its files are paths, its numbers a token spec."""
    from labelguard.core.tokens import FILE_KEYS, TokenSpec

    for key in FILE_KEYS:
        value = table.get(key)
        if key in table and (not isinstance(value, str) or not value):
            raise SpecError(f"tokens.{key} in {path} must be a path, got {value!r}")
    TokenSpec.from_mapping({k: v for k, v in table.items() if k not in FILE_KEYS}, source=path)
    return table


def _with_tokens(spec: LabelSpec, table: dict[str, Any], path: str | None) -> LabelSpec:
    """``spec`` with the token spec of a ``[tokens]`` table: the model config and tokenizer
    it names (relative to the config file), with the numbers it gives over what they say."""
    from labelguard.core.tokens import FILE_KEYS, TokenSpec
    from labelguard.readers.tokens import token_spec_from_files

    if not table:
        return spec
    numbers = TokenSpec.from_mapping({k: v for k, v in table.items() if k not in FILE_KEYS}, source=path or "")
    found = token_spec_from_files(table.get("model_config"), table.get("tokenizer"),
                                  relative_to=os.path.dirname(os.path.abspath(path or ".")))
    return replace(spec, tokens=numbers if found is None else found.merged(numbers))


def _audit_value(key: str, value: Any, path: str) -> Any:
    """An ``[audit]`` value checked for its type; SpecError naming the key and the file."""
    where = f"audit.{key} in {path}"
    if key == "cache":
        if not isinstance(value, bool):
            raise SpecError(f"{where} must be true or false, got {value!r}")
        return value
    if key in ("cache_dir", "color_map") and isinstance(value, str) and value:
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
        lines.append(f"# {printable(comment)}")  # a line break in a comment would end it
    lines.append("")
    lines.append("[labels]")
    data = spec.to_dict()
    for key in ("classes", "values", "num_classes", "ignore_index", "background", "reduce_zero_label"):
        if key not in data or data[key] is None:
            continue
        lines.append(f"{key} = {_toml_value(data[key], key)}")
    return "\n".join(lines) + "\n"


# TOML's short escapes; every other character the reports escape is written \uXXXX, so the
# file says exactly the names the data has and shows no control character when printed.
_TOML_ESCAPES = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r", '"': '\\"', "\\": "\\\\"}


def _toml_value(value: Any, key: str) -> str:
    """``value`` as a TOML value; SpecError for a string TOML cannot hold (bytes of a name
    that are no UTF-8, which ``key`` came from)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v, key) for v in value) + "]"
    if isinstance(value, str):
        if re.search("[\ud800-\udfff]", value):
            raise SpecError(f"{key}: {show_name(value)} holds bytes that are no UTF-8 (a file or folder name?); "
                            "a TOML file holds only Unicode text: rename it (or give the spec to each audit "
                            "with --classes)")
        escaped = re.sub(f'["\\\\{UNSAFE_CHARACTERS}]',
                         lambda match: _TOML_ESCAPES.get(match.group(), f"\\u{ord(match.group()):04x}"), value)
        return f'"{escaped}"'
    return str(value)
