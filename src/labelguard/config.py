"""Project configuration: ``labelguard.toml`` or ``[tool.labelguard]`` in ``pyproject.toml``.

Layered like a linter's config, lowest to highest priority: the dataset's own metadata,
the project config found by walking up from the data, ``--config FILE``, then CLI flags.
An unknown key is an error that names it.

A config found by walking up from the data is data (the trust model of docs/security.md):
anyone who ships or shares the data may have written it. It sets what a dataset's author
knows, its ``[labels]``, its ``[tokens]`` and the layout hints ``[audit]`` ``format``,
``key`` and ``color_map`` (the files it names in its own folder, and in the data when it is
the dataset's own); every other setting, which would decide where code runs, how strict the
verdict is or what is read and written outside the data, is refused with a warning. One
found above the audited PATH (a shared folder) is read only when it is this user's own.
``--config FILE`` is the user's own: all of it applies. :func:`within_trust` and
:func:`load_found` draw those lines, for every caller (through :class:`ConfigFinder`).

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
    check_images = "full"            # images decoded whole (default "structure"; "off")

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
import stat
import sys
from dataclasses import dataclass, field, replace
from typing import Any

from labelguard.core import storage
from labelguard.core.findings import Severity
from labelguard.core.owner import not_own, other_owner
from labelguard.core.paths import display_path, inside_root, resolves_inside
from labelguard.core.registry import REGISTRY
from labelguard.core.spec import LabelSpec
from labelguard.core.text import UNSAFE_CHARACTERS, clipped, printable, show_name, verb
from labelguard.errors import SpecError
from labelguard.readers.base import ReadError, read_text

CONFIG_NAME = "labelguard.toml"
AUDIT_KEYS = {"fail_on", "workers", "format", "key", "sample", "color_map", "max_pixels", "max_file_bytes",
              "cache", "cache_dir", "cache_max_bytes", "engine", "scheduler", "check_images"}
TOP_KEYS = {"labels", "audit", "severity", "tokens"}
# What a config found with the data may set beside [labels] and [tokens]: how the dataset's
# files are laid out, which its author knows. The other [audit] keys and [severity] decide where
# code runs (engine, scheduler, workers), how strict the verdict is (fail_on, severities,
# sample, check_images), and what is read and written outside the data (cache, read limits).
DATA_AUDIT_KEYS = ("format", "key", "color_map")
# The [labels] keys a config found with the data may not set: they make verdicts less strict.
DATA_REFUSED_LABEL_KEYS = ("sizes",)
# The flag that makes each setting a found config may not make, for its warning to name.
FLAGS = {"audit.engine": "--engine", "audit.scheduler": "--scheduler", "audit.workers": "--workers",
         "audit.sample": "--sample", "audit.fail_on": "--fail-on", "audit.cache": "--no-cache",
         "audit.cache_dir": "--cache-dir", "audit.max_pixels": "--max-pixels",
         "audit.max_file_bytes": "--max-file-bytes", "audit.check_images": "--check-images",
         "severity": "--severity CODE=LEVEL"}


# Why a setting of a config was not applied (Refusal.kind).
TRUSTED_ONLY = "trusted only"  # only a config of the user's own may make it
OUTSIDE = "outside"  # it names a file outside where the config may name files
NOT_DETECTED = "not detected"  # a layout hint whose layout's detection does not take the data


@dataclass(frozen=True)
class Refusal:
    """A setting of a config that was not applied: ``kind`` says why, ``why`` words it where
    the kind alone does not (the file named, the layout detected instead)."""

    setting: str  # table.key
    kind: str
    why: str = ""


@dataclass(frozen=True)
class ConfigUse:
    """What one config file decided in an audit, as the report names it.

    Attributes:
        trusted: given by the user (``--config``); False for a config found with the data.
        applied: the settings it made, as ``table.key`` (``labels.num_classes``), in file order.
        refused: each setting it may not make (:func:`within_trust`), or that the audit did
            not apply (a layout hint the data's layout does not take).
        unread: why a config found above the data was not read at all (:func:`load_found`).
    """

    path: str
    trusted: bool
    applied: tuple[str, ...] = ()
    refused: tuple[Refusal, ...] = ()
    unread: str | None = None

    def to_dict(self) -> dict[str, Any]:
        entry = {"path": self.path, "trusted": self.trusted, "applied": list(self.applied),
                 "refused": [refusal.setting for refusal in self.refused]}
        if self.unread:
            entry["not_read"] = self.unread
        return entry

    def describe(self) -> str:
        """One line: the file, its trust, what it set and what it was refused."""
        how = "given with --config" if self.trusted else "found with the data"
        if self.unread:
            return f"{self.path} ({how}): not read: {self.unread}"
        text = f"{self.path} ({how}): applied {', '.join(self.applied) or 'nothing'}"
        if self.refused:
            text += f"; not applied: {', '.join(refusal.setting for refusal in self.refused)}"
        return text

    def warnings(self) -> list[str]:
        """A warning for each refusal: the file not read; else the settings only the user's
        own config may make, together, then each refusal that says its own why. None names
        the found file as something to apply: what it asked for is the user's to decide."""
        if self.unread:
            return [f"{self.path} was not read, and the audit ran as if it were absent: it lies above the audited "
                    f"data and {self.unread} (a config found above the data is read only when it is this user's "
                    "own, or root's, and no one else may write into it)"]
        kinds = [refusal.setting for refusal in self.refused if refusal.kind == TRUSTED_ONLY]
        warnings = []
        if kinds:
            flags = [flag for flag in dict.fromkeys(FLAGS.get(setting, FLAGS.get(setting.partition(".")[0]))
                                                    for setting in kinds) if flag]
            with_flags = f"the flags ({', '.join(flags)}) or " if flags else ""
            warnings.append(f"{self.path} was found with the data, so it is data: it may set the label spec "
                            f"([labels], [tokens]) and layout hints ([audit] {', '.join(DATA_AUDIT_KEYS)}), "
                            f"not {', '.join(kinds)}, which {verb(len(kinds), 'was')} not applied; such settings "
                            f"are made by whoever runs labelguard, with {with_flags}a config file of their own "
                            "passed with --config (config_file= from Python)")
        warnings.extend(f"{self.path}: {refusal.why}" for refusal in self.refused if refusal.kind != TRUSTED_ONLY)
        return warnings

    def refusing(self, refusal: Refusal, applied_elsewhere: bool = False) -> "ConfigUse":
        """This use with ``refusal`` added, its setting no longer among the applied ones unless
        it was ``applied_elsewhere`` (to another PATH of the audit)."""
        applied = self.applied if applied_elsewhere else tuple(s for s in self.applied if s != refusal.setting)
        return replace(self, applied=applied, refused=(*self.refused, refusal))


@dataclass
class Config:
    """A parsed config file: its settings, and what it decided (``use``: its trust, the
    settings it made and those it was refused)."""

    path: str
    use: ConfigUse
    spec: LabelSpec = field(default_factory=LabelSpec)
    audit: dict[str, Any] = field(default_factory=dict)
    severity: dict[str, Severity] = field(default_factory=dict)
    tokens: dict[str, Any] = field(default_factory=dict)  # the [tokens] table, its files not yet read


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


class ConfigFinder:
    """The config files that apply to data, lowest priority first: the one found by walking
    up from it (data: :func:`load_found`), then ``config_file`` (the user's own). Each file is
    parsed once, however many datasets of an audit it applies to."""

    def __init__(self, config_file: str | None, use_project_config: bool = True) -> None:
        self.config_file = config_file
        self.use_project_config = use_project_config
        self.given = [load_config(config_file)] if config_file else []
        self._found: dict[tuple[str, str], Config] = {}

    def configs(self, start: str, audited: str | None = None) -> list[Config]:
        """Those that apply to the data at ``start``, found in an audit of the PATH ``audited``
        (default: ``start``)."""
        if not self.use_project_config:
            return list(self.given)
        path = find_project_config(start)
        # The file given with --config is the user's, also where the data's walk finds it.
        if path is None or (self.config_file and os.path.isfile(self.config_file)
                            and os.path.samefile(path, self.config_file)):
            return list(self.given)
        audited = storage.abspath(audited or start)
        if (path, audited) not in self._found:
            self._found[path, audited] = load_found(path, audited)
        return [self._found[path, audited], *self.given]


def load_found(path: str, audited: str) -> Config:
    """The config at ``path``, found by walking up from the data of an audit of ``audited`` (a
    PATH), loaded as data (:func:`within_trust`). One that lies above the audited data (not at
    or under it: a shared folder, another user's) is read only when it is this user's own, or
    root's, and other users may not write into it (:func:`labelguard.core.owner.not_own`; its
    group may, as every file written under umask 002 is); otherwise it is not read, and its
    ``use`` says why."""
    data = data_folder(audited)
    if not inside_root(os.path.dirname(os.path.abspath(path)), data):
        try:
            # A link is judged as itself first: another user's link to a file of this user's
            # (or root's) would otherwise borrow its owner.
            link = os.lstat(path)
            problem = (other_owner(link, root_too=True) if stat.S_ISLNK(link.st_mode) else None) or \
                not_own(path, os.stat(path), root_too=True, group_may_write=True)
        except OSError as exc:
            problem = f"it cannot be looked at ({exc.strerror})"
        if problem:
            return Config(path, ConfigUse(path, trusted=False, unread=problem))
    return load_config(path, data)


def data_folder(path: str) -> str:
    """The folder that holds the data of the PATH ``path``: itself, or a file's folder."""
    if storage.url_scheme(path) or os.path.isdir(path):
        return path
    return os.path.dirname(os.path.abspath(path))


def load_config(path: str, data: str | None = None) -> Config:
    """Parse a config file and keep what it may set (:func:`within_trust`): all of it when the
    user gave it, less when it was found with the ``data`` (the folder of the audited PATH);
    SpecError naming the file and key when it is invalid."""
    tomllib = toml_parser()
    try:
        tables = tomllib.loads(read_text(path))
    except ReadError as exc:
        raise SpecError(f"cannot read config {path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"invalid TOML in {path}: {exc}") from None
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise SpecError(f"invalid TOML in {path}: arrays or inline tables nest too deep to parse (past "
                        "Python's recursion limit); a labelguard config nests a few levels") from None
    if os.path.basename(path) == "pyproject.toml":
        tables = tables.get("tool", {}).get("labelguard", {})
    return within_trust(parse_config(tables, path), data)


def parse_config(data: dict[str, Any], path: str) -> Config:
    """The settings of a config file's tables, each checked (SpecError naming the key and the
    file), its [tokens] files not yet read: :func:`within_trust` decides which apply."""
    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        raise SpecError(f"unknown config key {', '.join(unknown)} in {path}; known tables: "
                        f"{', '.join(sorted(TOP_KEYS))}")
    labels = data.get("labels", {})
    if not isinstance(labels, dict):
        raise SpecError(f"[labels] in {path} must be a table")
    tokens = data.get("tokens", {})
    if not isinstance(tokens, dict):
        raise SpecError(f"[tokens] in {path} must be a table")
    audit = data.get("audit", {})
    unknown = sorted(set(audit) - AUDIT_KEYS)
    if unknown:
        raise SpecError(f"unknown key {', '.join('audit.' + k for k in unknown)} in {path}; known: "
                        f"{', '.join(sorted(AUDIT_KEYS))}")
    severity = {}
    for code, level in data.get("severity", {}).items():
        known = known_code(code, f"[severity] of {path}")
        try:
            severity[known] = Severity.parse(level)
        except ValueError as exc:
            raise SpecError(f"{exc} for {code} in {path}") from None
    applied = (*(f"labels.{key}" for key in labels), *(f"tokens.{key}" for key in tokens),
               *(f"audit.{key}" for key in audit), *(f"severity.{code}" for code in severity))
    return Config(path, ConfigUse(path, trusted=True, applied=applied),
                  # named as the report names files (relative to the working folder when inside it), not
                  # as the walk up from the data found it: an absolute path there is the machine's, not the user's
                  spec=LabelSpec.from_mapping(labels, source=display_path(path)) if labels else LabelSpec(),
                  audit={key: _audit_value(key, value, path) for key, value in audit.items()},
                  severity=severity, tokens=_token_table(tokens, path))


def within_trust(config: Config, data: str | None = None) -> Config:
    """``config`` with only the settings its trust lets it make, and its [tokens] files read.

    A config given by the user (``data`` None: ``--config``, ``config_file=``) makes them
    all. One found by walking up from the data at ``data`` (the folder of the audited PATH)
    is data: it sets [labels], [tokens] and the [audit] layout hints (:data:`DATA_AUDIT_KEYS`),
    and the files it names (tokens.*, audit.color_map) must lie, links resolved, in its own
    folder and, when it lies at or under ``data`` (the dataset's own), in ``data`` too; every
    other setting is refused, in ``use.refused`` with why, for the report to warn of."""
    from labelguard.core.spec import FILE_KEYS

    if data is None:
        return replace(config, spec=_with_tokens(config.spec, config.tokens, config.path))
    folder = os.path.dirname(os.path.abspath(config.path))
    refused = [Refusal(setting, TRUSTED_ONLY) for setting in config.use.applied if not _data_may_set(setting)]
    if "labels.masks_hold" in config.use.applied:
        # Either reading loosens a verdict: "instances" leaves the masks out of the class rules,
        # "classes" is final and silences LG212's doubt: the user's own to declare.
        refused.append(Refusal("labels.masks_hold", TRUSTED_ONLY))
    audit = {key: value for key, value in config.audit.items() if key in DATA_AUDIT_KEYS}
    tokens = dict(config.tokens)
    own = inside_root(folder, data)  # the dataset's own config, not one above it
    # (table, key, the path as written, the file it names)
    named = [(tokens, key, tokens[key], os.path.join(folder, tokens[key])) for key in FILE_KEYS if key in tokens]
    if "color_map" in audit:
        named.append((audit, "color_map", audit["color_map"], audit["color_map"]))
    for table, key, value, path in named:
        if not resolves_inside(path, folder):
            outside = "outside the config's folder (a config found with the data names files in its own folder only)"
        elif own and not resolves_inside(path, data):
            outside = ("outside the audited data, once links are resolved (the dataset's own config names files "
                       "of the data only)")
        else:
            continue
        setting = f"{'tokens' if table is tokens else 'audit'}.{key}"
        refused.append(Refusal(setting, OUTSIDE, f"{setting} = {clipped(repr(value))} names a file {outside}: "
                                                 "not read"))
        del table[key]
    dropped = {refusal.setting for refusal in refused}
    use = replace(config.use, trusted=False, applied=tuple(s for s in config.use.applied if s not in dropped),
                  refused=tuple(refused))
    spec = config.spec
    if "labels.sizes" in dropped:  # a size relation loosens LG206/LG213: the user's own to declare
        spec = replace(spec, sizes=None)
    if "labels.masks_hold" in dropped:
        spec = replace(spec, masks_hold=None)
    return replace(config, spec=_with_tokens(spec, tokens, config.path), audit=audit, severity={}, use=use)


def _data_may_set(setting: str) -> bool:
    """Whether a config found with the data may make ``setting`` (``table.key``)."""
    table, _, key = setting.partition(".")
    if table == "labels":
        return key not in DATA_REFUSED_LABEL_KEYS
    return table == "tokens" or (table == "audit" and key in DATA_AUDIT_KEYS)


def _token_table(table: dict[str, Any], path: str) -> dict[str, Any]:
    """A ``[tokens]`` table checked: its files are paths, its numbers a token spec."""
    from labelguard.core.spec import FILE_KEYS, TokenSpec

    for key in FILE_KEYS:
        value = table.get(key)
        if key in table and (not isinstance(value, str) or not value):
            raise SpecError(f"tokens.{key} in {path} must be a path, got {value!r}")
    TokenSpec.from_mapping({k: v for k, v in table.items() if k not in FILE_KEYS}, source=path)
    return table


def _with_tokens(spec: LabelSpec, table: dict[str, Any], path: str | None) -> LabelSpec:
    """``spec`` with the token spec of a ``[tokens]`` table: the model config and tokenizer
    it names (relative to the config file), with the numbers it gives over what they say."""
    from labelguard.core.spec import FILE_KEYS, TokenSpec
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
    if key == "check_images":
        from labelguard.readers.integrity import CHECK_MODES

        if value not in CHECK_MODES:
            raise SpecError(f"{where} must be one of {', '.join(CHECK_MODES)}; got {value!r}")
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
    import labelguard.rules  # noqa: F401  (registers every code)

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
    for key in ("classes", "values", "num_classes", "ignore_index", "background", "reduce_zero_label", "sizes",
                "masks_hold"):
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
