"""The rule registry and the runner that keeps one rule's crash from costing the others.

A rule is one registered function with the code it reports (its :class:`Check`: name,
severity, documentation), the scope it reads and its examples:

* ``"mask"``: one mask file, as a :class:`~labelguard.core.records.MaskSample`;
* ``"pair"``: a mask and the image it is paired with (the same sample, its paired image's
  geometry read);
* ``"annotation"``: one annotation file (a VOC XML, a YOLO label file, a COCO file with its
  image table, a CSV table, an ImageFolder class folder), as an
  :class:`~labelguard.core.records.AnnotationRecord`; its columns may be numpy arrays (a COCO
  file holds up to millions of annotations) and rules judge them vectorised;
* ``"tokens"``: rows of a tokenized dataset (a record batch of a file, or a batch of tensors
  on the torch side), as a :class:`~labelguard.core.tokens.TokenBatch`; a file's batches are
  judged one by one and their findings merged per file;
* ``"entries"``: a file that names other files (a file list, a data.yaml's splits), as
  discovery resolved its names: an :class:`~labelguard.core.records.EntriesRecord`;
* ``"files"``: what discovery found about a dataset's files as files (orphans of the
  pairing, label files no dataset read): a :class:`~labelguard.core.records.FileFacts`;
* ``"dataset"``: the merged :class:`~labelguard.core.summary.Summary` of one dataset (an
  audit of several runs these rules once per dataset, on that dataset's files only).

The same rules judge what the PyTorch guard sees at run time: a target tensor becomes the
record its scope reads (a mask tensor a ``mask`` sample whose container is ``"array"``, class
ids an ``annotation`` record of them), and ``guard()`` runs the rules of that scope through
:func:`run_rules` with ``at_run_time=True``. A rule that does not apply to a tensor says
``files_only=True`` and is left out there: one about how a file stores its labels (a JPEG
container, a declared storage dtype), about what only a file has (class names, image
references), or whose verdict is noise at run time (LG205: random crops are often empty).
Every other rule runs in both, so a rule is written once for the audit and the guard. A rule that can
report only values the spec does not allow (or that are not whole numbers) says
``only_bad_values=True``: the guard then skips it on a tensor its pre-screen proves clean
(:func:`screened`).

Every rule is ``rule(subject, spec) -> iterable of findings``. :func:`run_rules` calls each
rule of a scope on its own: a rule that raises becomes an internal-error note naming the
rule and the file, and the next rule still runs. A rule of a check only some formats can
have says which record field it reads (``reads="images"``): the runner passes it by on a
record that leaves that field None, so that a small VOC file does not pay for COCO's rules.
"""

from __future__ import annotations

import logging
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from labelguard.core.findings import Finding
from labelguard.core.registry import Check

log = logging.getLogger(__name__)

SCOPES = ("mask", "pair", "annotation", "tokens", "entries", "files", "dataset")


@dataclass(frozen=True)
class Example:
    """A case a rule's tests write to real files and audit.

    Attributes:
        fails: True when the rule reports its code on these files, False when it stays silent.
        description: what the case shows.
        files: relative path -> what to write there: an array (written as the extension
            says: .png, .jpg, .npy, .tif), a dict of arrays (.npz, .h5) or text.
        spec: the label spec's fields (``num_classes``, ``ignore``...); none means no spec.
        options: audit options (``key``, ``image_key``, ``color_map``...; ``lists`` relative to
            where the files are written).
        path: the folder audited, relative to where the files are written (default: that
            folder itself).
    """

    fails: bool
    description: str
    files: Callable[[], Mapping[str, Any]]
    spec: Mapping[str, Any] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)
    path: str = ""


@dataclass(frozen=True)
class Rule:
    """One registered rule: the code it reports, the scope it reads and its logic."""

    check: Check
    scope: str
    apply: Callable[[Any, Any], Iterable[Finding]]
    examples: tuple[Example, ...] = ()
    reads: str | None = None  # the subject's field it needs; None: it runs on every subject
    files_only: bool = False  # not run on the guard's tensors (see the module's docstring)
    only_bad_values: bool = False  # reports only values the spec does not allow or that are not whole

    @property
    def code(self) -> str:
        return self.check.code

    @property
    def __name__(self) -> str:  # noqa: A003  (callers name a rule as they name a function)
        return f"{self.check.code} {self.apply.__name__}"

    def __call__(self, subject: Any, spec: Any) -> list[Finding]:
        return list(self.apply(subject, spec))


RULES: dict[str, list[Rule]] = {scope: [] for scope in SCOPES}
# Per scope, its rules as run: (None, the rules every subject gets), then (field, the rules
# that read it) for each field; rebuilt whenever a rule is registered or removed.
_GROUPS: dict[str, list[tuple[str | None, list[Rule]]]] = {}
# Per scope, :func:`screened`'s answer; rebuilt with the groups.
_SCREENED: dict[str, bool] = {scope: True for scope in SCOPES}


def rule(check: Check, scope: str, examples: Iterable[Example] = (), reads: str | None = None,
         files_only: bool = False, only_bad_values: bool = False) -> Callable:
    """Register the decorated function as a rule reporting ``check`` on ``scope``; with
    ``reads``, only for subjects whose field of that name is not None; with ``files_only``,
    in the audit of files only (not on the tensors the guard checks); with ``only_bad_values``,
    the rule reports nothing unless a value is one the spec does not allow or is not a whole
    number, so the guard's pre-screen (every value whole and legal) may pass it by."""
    if scope not in RULES:
        raise ValueError(f"unknown rule scope {scope!r}; known: {', '.join(SCOPES)}")  # not a user mistake

    def register(func: Callable[[Any, Any], Iterable[Finding]]) -> Callable:
        RULES[scope].append(Rule(check, scope, func, tuple(examples), reads, files_only, only_bad_values))
        _group(scope)
        return func

    return register


def rules_for(scope: str) -> list[Rule]:
    """The registered rules of ``scope``, in registration order (the live list)."""
    return RULES[scope]


def screened(scope: str) -> bool:
    """True when every rule of ``scope`` that runs at run time on a tensor of values reports
    only values the spec does not allow or that are not whole numbers: a tensor whose values a
    pre-screen proves whole and legal needs no rule of that scope. A rule that reads a field
    (``reads="boxes"``) runs only on subjects that fill it, which a tensor of values never does;
    any other rule added without ``only_bad_values`` turns the pre-screen off. Kept per scope
    as rules are registered: the guard asks once per target."""
    return _SCREENED[scope]


def all_rules() -> list[Rule]:
    return [r for scope in SCOPES for r in RULES[scope]]


def unregister(func: Callable) -> None:
    """Remove the rule registered for ``func`` (a rule defined by a test, say)."""
    for scope, rules in RULES.items():
        rules[:] = [r for r in rules if r.apply is not func]
        _group(scope)


def _group(scope: str) -> None:
    groups: dict[str | None, list[Rule]] = {None: []}
    for registered in RULES[scope]:
        groups.setdefault(registered.reads, []).append(registered)
    _GROUPS[scope] = list(groups.items())
    _SCREENED[scope] = all(r.files_only or r.only_bad_values or r.reads is not None for r in RULES[scope])


def run_rules(scope: str, subject: Any, spec: Any, where: str, findings: list[Finding],
              errors: list[str], at_run_time: bool = False, reading: tuple[str, ...] | None = None) -> None:
    """Run every rule of ``scope`` that applies to ``subject``, appending to ``findings``: the
    rules that read no particular field, then, field by field, those reading a field the
    subject fills (one look per field; the audit sorts the findings). A rule that raises adds
    an internal-error note to ``errors`` naming the rule and ``where``, and the others run.
    ``at_run_time``: the subject is a tensor of the guard; rules of files only are left out.
    ``reading``: only the rules that read one of these fields (the guard's detection boxes,
    whose class ids its value rules judged already)."""
    for needed, rules in _GROUPS.get(scope, ()):
        if reading is not None and needed not in reading:
            continue
        if needed is not None and getattr(subject, needed) is None:
            continue
        for registered in rules:
            if at_run_time and registered.files_only:
                continue
            try:
                found = registered.apply(subject, spec)
                if found:
                    findings.extend(found)
            except Exception as exc:  # a bug in one rule must not hide the other rules' findings
                log.debug("rule %s failed on %s", registered.__name__, where, exc_info=True)
                detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
                errors.append(f"{where}: rule {registered.code} ({registered.check.name}, "
                              f"{registered.apply.__name__}) crashed: {detail}")


def judge(scope: str, subject: Any, spec: Any, where: str, at_run_time: bool = False,
          reading: tuple[str, ...] | None = None) -> list[Finding]:
    """:func:`run_rules` for a caller with no list of internal errors to report them in (the
    guard, checking a target): a rule that crashes raises RuntimeError naming it, after every
    other rule ran; a bug of labelguard is never taken for a clean target."""
    findings: list[Finding] = []
    errors: list[str] = []
    run_rules(scope, subject, spec, where, findings, errors, at_run_time, reading)
    if errors:
        raise RuntimeError("; ".join(errors))  # not a user mistake: a rule of labelguard crashed
    return findings
