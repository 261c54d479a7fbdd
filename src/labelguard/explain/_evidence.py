"""What the whole log shows besides the error: the evidence that ranks the causes.

The error line says what failed; the lines before it often say why. A training log prints
its losses: a loss that grew by orders of magnitude before it became NaN points at a
diverging run, a loss that was NaN from its first value at the data or the setup, a run of
finite losses before a BCE assert away from a head without a sigmoid (that fails at the
first step), and a loss that stayed within one order of magnitude (before its NaN, or up to
the error when no loss was non-finite) away from divergence, towards one bad batch. An fp16
loss scaler that cut its scale during training shows gradients overflowing. A path in a
FileNotFoundError that ends with a space is a list line nobody stripped.

Lines labelguard printed itself are evidence of what it checked. An error labelguard.torch
raised (``labelguard.torch.SampleError: LG201 sample 17 (...): ...``) is the failure itself,
with the sample, file and values it names. What its NaN tracer and watch found (LG502, LG508)
says whether the run diverged, fed a NaN input or met an unsafe operation. A freeze that does
nothing (LG507) or frozen parameters in the optimizer (LG504) describe the setup: they are tied
to a failure only when labelguard located the NaN or the growth in the module they name. A code
a hint cites in passing ("... before the NaN (LG508)") is no report.

An error labelguard raised is told from a note its guard added to an error the dataset raised
(``labelguard.torch.guard: LG003 sample 1 (...): the dataset raised FileNotFoundError``): the
first is labelguard's check failing, the second the dataset's own error with the sample and file
labelguard named. An error that sums up findings ("preflight found 1 error") is read from the
finding listed after it.

Inference is claimed only on positive signs: the traceback runs transformers' generation (or a
pipeline), no frame of it trains (a backward pass, an optimizer step or one handed on, a
training loop or script), and the log prints no training progress (epochs, steps), loss or
gradient norm. A printed gradient norm is a series like a loss: its growth by orders of
magnitude is divergence. The embeddings of positions count where they raised the error, and for
a size mismatch only at the sequence axis (dimension 1, or the sizes a tokenizer warned about).
A few lines tell the precision (float16), weights a checkpoint did not hold, the sampling
settings, a tokenizer's warning of a sequence too long, the target a loss rejected against the
ignore_index the log declares, and the shapes ``torch.stack`` could not join (read as shapes:
which dimensions differ, never a kind of data guessed from the rank).

Each piece of evidence has a key the knowledge base's causes name (``supported_by``,
``weakened_by``, ``noted_by``) and a sentence, with the line it was read from, that the
explanation shows. The reading is one pass over the lines; only lines that contain one of the
words the readings look for are parsed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

from labelguard.core.text import cut, plural

# Keys of evidence, named by the causes of the knowledge base.
# The first non-finite loss: a printed value (nan, inf) or a message the log prints about one.
LOSS_NONFINITE = "loss-nonfinite"
# A loss grew by GROWTH or more between two printed values.
LOSS_GREW = "loss-grew"
# A loss was non-finite from its first printed value.
LOSS_NAN_FROM_START = "loss-nan-from-start"
# A loss printed STEADY_VALUES or more finite values within STABLE_RANGE of each other, then
# became non-finite.
LOSS_STEADY = "loss-steady"
# As LOSS_STEADY, but no loss became non-finite: the values stayed in range up to the error.
LOSS_STABLE = "loss-stable"
# An fp16 loss scaler (apex, DeepSpeed, fairseq) cut its scale after a printed loss value.
LOSS_SCALE_REDUCED = "loss-scale-reduced"
# A box term of a detection loss was printed: the run trains an object detector.
DETECTION_LOSSES = "detection-losses"
# A loss (or, without one, a gradient norm) printed two or more finite values: training ran before the error.
TRAINED = "trained"
# A printed gradient norm grew by GROWTH or more between two printed values.
GRAD_NORM_GREW = "grad-norm-grew"
# labelguard.torch raised an error naming a check code (SampleError, NonFiniteError,
# PreflightError): the failure itself. One piece per code, which carries it.
LABELGUARD_ERROR = "labelguard-error"
# labelguard.torch.guard added a note naming a check code to an error the dataset raised: the
# dataset's error, with the sample and file labelguard named. One piece per code, which carries it.
LABELGUARD_NOTE = "labelguard-note"
# labelguard printed LG504 or LG507 (frozen parameters): the setup, tied to no failure by itself.
FROZEN_REPORTED = "frozen-reported"
# labelguard located the NaN or the growth (LG502, LG508) in a module an LG504/LG507 line names, or
# raised LG504/LG507 itself (preflight stopped the run on it).
FROZEN_AT_FAILURE = "frozen-at-failure"
# labelguard printed LG508 (divergence), or its tracer or watch saw the growth end in the NaN (LG502).
DIVERGENCE_REPORTED = "divergence-reported"
# labelguard printed LG509 (a bad input), or its tracer found the model input non-finite (LG502).
BAD_INPUT_REPORTED = "bad-input-reported"
# labelguard's tracer saw finite inputs and parameters give a non-finite value (LG502).
UNSAFE_OP_REPORTED = "unsafe-op-reported"
# labelguard's tracer found non-finite parameters in the module that produced the NaN (LG502).
NONFINITE_WEIGHTS = "nonfinite-weights"
# labelguard's watch saw no growth in the steps before the non-finite value (LG502).
NO_GROWTH_REPORTED = "no-growth-reported"
# -9223372036854775808 (NaN cast to int64), or labelguard's LG204 (a NaN label).
CAST_NAN = "cast-nan"
# A path in a missing or unreadable file's message has whitespace at an edge.
PATH_WHITESPACE = "path-whitespace"
MISSING_FILE = "missing-file"
UNREADABLE_FILE = "unreadable-file"
# The traceback runs transformers' generation or a pipeline, no frame of it trains, and the log
# prints no training progress, loss or gradient norm.
INFERENCE = "inference"
# The model runs in float16 (torch_dtype=torch.float16, .half(), a float16 tensor printed).
HALF_PRECISION = "half-precision"
# transformers initialised weights the checkpoint did not hold.
WEIGHTS_NOT_LOADED = "weights-not-loaded"
# Sampling with a temperature of (about) zero, or top_p 0.
SAMPLING_SETTINGS = "sampling-settings"
# The frame that raised the error (the last one outside torch) computes position (or token-type)
# embeddings.
POSITION_FRAMES = "position-frames"
# As POSITION_FRAMES, for a size mismatch at the sequence axis: dimension 1 of the embeddings'
# (batch, sequence, ...) tensors, or sizes that are a tokenizer's sequence length and limit.
POSITION_SEQUENCE_MISMATCH = "position-sequence-mismatch"
# A tokenizer warned that a sequence is longer than the model's maximum length.
SEQUENCE_TOO_LONG = "sequence-too-long"
# The sizes of the size mismatch that failed are the length and the limit a tokenizer warned about.
MISMATCH_SIZES_OF_LONG_SEQUENCE = "mismatch-sizes-of-long-sequence"
# The target a loss rejected ("Target 255 is out of bounds") is an ignore value (negative, 255)...
TARGET_IGNORE_VALUE = "target-ignore-value"
# ...or a non-negative id that is no ignore value (a class id past the classes).
TARGET_CLASS_ID = "target-class-id"
# The shapes torch.stack could not join, by which dimensions differ: both of two 2-D shapes, the
# height and width of two 3-D shapes with one leading size, the leading size alone of two 3-D
# shapes (1 to 4: a channel count), the last alone (a variable length), or the rank.
STACK_MAP_SIZES = "stack-map-sizes"
STACK_IMAGE_SIZES = "stack-image-sizes"
STACK_CHANNELS = "stack-channels"
STACK_RANKS = "stack-ranks"
STACK_LENGTHS = "stack-lengths"

KEYS = (
    LABELGUARD_ERROR, LABELGUARD_NOTE,
    LOSS_NONFINITE, LOSS_GREW, LOSS_NAN_FROM_START, LOSS_STEADY, LOSS_STABLE, LOSS_SCALE_REDUCED, TRAINED,
    GRAD_NORM_GREW, DETECTION_LOSSES, FROZEN_REPORTED, FROZEN_AT_FAILURE,
    DIVERGENCE_REPORTED, BAD_INPUT_REPORTED, UNSAFE_OP_REPORTED, NONFINITE_WEIGHTS, NO_GROWTH_REPORTED,
    CAST_NAN, PATH_WHITESPACE, MISSING_FILE, UNREADABLE_FILE,
    INFERENCE, HALF_PRECISION, WEIGHTS_NOT_LOADED, SAMPLING_SETTINGS, POSITION_FRAMES, POSITION_SEQUENCE_MISMATCH,
    SEQUENCE_TOO_LONG, MISMATCH_SIZES_OF_LONG_SEQUENCE, TARGET_IGNORE_VALUE, TARGET_CLASS_ID,
    STACK_MAP_SIZES, STACK_IMAGE_SIZES, STACK_CHANNELS, STACK_RANKS, STACK_LENGTHS,
)

# A loss that grew by this factor between two printed values has diverged.
GROWTH = 100.0
# Finite values a loss must print (before its NaN, or up to the error) for "steady" to mean anything.
STEADY_VALUES = 3
# A loss is steady when its printed values stay within this factor of each other (a loss
# wandering from 0.04 to 3.9 is neither grown by GROWTH nor steady).
STABLE_RANGE = 10.0

# "loss: 0.31", "[G loss: nan]", "train_loss=1.2e3", "'loss': nan", "Loss = tensor(nan", and
# without a separator as Keras and many loops print it, "- loss 0.3987 -", "Loss is nan"; the
# word before "loss" names the series ("G", "train"), read from the text before the match.
# Without a separator the number must stand alone: not a count ("loss 1/50", "loss 2 of 5",
# "loss 10%") nor followed by a word that is not the next printed key ("losses 12 skipped"
# against "loss 0.41 lr 0.001").
_LOSS = re.compile(
    r"(?i)loss(?:es)?\b['\"\]]?"
    r"(?:[ \t]{0,3}[:=][ \t]{0,3}|(?P<bare>[ \t]{1,3}(?:(?:is|became|becomes)[ \t]{1,3})?))"
    r"(?:tensor\()?['\"]?(?P<value>[-+]?(?:nan|inf(?:inity)?|(?:\d{1,30}\.?\d{0,30}|\.\d{1,30})"
    r"(?:e[-+]?\d{1,4})?))(?![\w.])"
    r"(?(bare)(?![ \t]{0,3}(?:of\b|[/%]))"
    r"(?![ \t]{1,3}[a-z_][\w@]{0,30}(?![\w@])(?![ \t]{0,3}[:=]?[ \t]{0,3}[-+(]?[\d.])))"
)
# A non-finite loss in the forms the knowledge base's "loss-nonfinite" entry recognises: a
# printed value ("loss: nan", "Loss is nan."), or a message without one ("Loss became infinite
# or NaN at iteration=5230", "NaN loss encountered").
NONFINITE_LOSS_MESSAGES = (
    r"(?i)\bloss(?:es)?\b['\"\]]?(?:[ \t]{0,3}[:=][ \t]{0,3}|[ \t]{1,3})(?:tensor\()?['\"]?[-+]?(?:nan|inf)\b",
    r"(?i)\bloss (?:is|became|becomes) (?:infinite or )?(?:nan|inf)",
    r"(?i)\b(?:nan|non-finite) loss\b",
)
_NONFINITE_LOSS = tuple(re.compile(pattern) for pattern in NONFINITE_LOSS_MESSAGES)
# An fp16 loss scaler cutting its scale after an overflow: apex ("Gradient overflow.  Skipping
# step, loss scaler 0 reducing loss scale to 32768.0"), DeepSpeed ("Attempted loss scale: 65536,
# reducing to 32768"), fairseq ("setting loss scale to: 64.0", "Minimum loss scale reached").
_SCALE_REDUCED = re.compile(
    r"(?i)\breducing loss scale to (?P<apex>[\d.e+]{1,20})|\bAttempted loss scale: [\d.e+]{1,20}, reducing to "
    r"(?P<deepspeed>[\d.e+]{1,20})|gradient overflow detected.{0,40}setting loss scale to: (?P<fairseq>[\d.e+-]{1,20})"
    r"|\bMinimum loss scale reached \((?P<minimum>[\d.e+-]{1,20})\)"
)
# The box terms of detection losses (torchvision, mmdetection, DETR, YOLO): the run trains a detector.
_BOX_LOSS = re.compile(r"\b(?:loss_(?:box_reg|rpn_box_reg|bbox|giou|objectness)|box_loss|giou_loss)\b")
_LOSS_NAME = re.compile(r"(?i)(?:^|[^a-z0-9])(?P<name>[a-z][a-z0-9]{0,15})[ _]$")
_LOAD_WORDS = (" load", " Load", " open", " Open", " read", " Read")
_NO_SUCH_FILE = re.compile(
    r"No such file or directory:?[ \t]{0,3}(?P<quote>['\"])(?P<path>[^'\"\n]{1,1000})(?P=quote)"
)
_UNABLE_TO_LOAD = re.compile(
    r"(?i)\b(?:unable to|failed to|cannot|can't|could not) (?:load|open|read)\b(?P<what>[^:\n]{0,80}):"
    r"[ \t]?(?P<path>[^\n]{1,1000})"
)
# A check code labelguard reports: where a finding's message starts (the start of a line, after a
# logger's or an exception's ':', a log format's ' - ' or ']', after ';' in a list of findings, and
# after the level a handler prints before the message, as Rich's "[12/05/26 10:01:02] WARNING  LG508"),
# not a code a hint cites in passing ("... before the NaN (LG508)", "(LG504/LG507)").
_LEVEL = r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)[ \t]{1,8}"
_REPORTED = re.compile(rf"(?:^[ \t]{{0,8}}|[:;\]][ \t]{{0,3}}|[ \t]-[ \t]|^[ \t]{{9,40}}(?={_LEVEL}))(?:{_LEVEL})?"
                       r"(?P<code>LG\d{3})\b(?![/)])")
# An error's message that only counts findings ("preflight found 1 error:"): the findings follow it.
_COUNT_ONLY = re.compile(r"\bfound \d{1,9} (?:errors?|warnings?|findings?|problems?)\W{0,3}$")
# The exception line of an error labelguard raised, and the note its guard adds to an error the
# dataset raised (the code then follows the note's prefix).
_RAISED = re.compile(r"\blabelguard(?:\.\w{1,30}){0,3}\.\w{0,40}Error[ \t]{0,3}:[ \t]{0,3}(?P<error>LG\d{3})\b"
                     r"|\blabelguard\.torch\.guard:[ \t]{0,3}(?P<note>LG\d{3})\b")
# Modules a finding locates (LG502, LG508): where a NaN was produced or a growth showed first.
_LOCATED = re.compile(r"(?:the output of|produced by module|the forward of) '(?P<name>[^'\n]{1,200})'")
# Modules a freeze finding names (LG507: 'name' (Type)), and the modules of the parameters it lists.
_QUOTED_MODULE = re.compile(r"'(?P<name>[^'\n]{1,200})' \(")
_PARAMETER = re.compile(r"(?<![\w.])(?P<module>[A-Za-z_][\w.]{0,200}?)\.(?:weight|bias)\b")
_SETUP_CODES = ("LG504", "LG507")
_SEVERITY = re.compile(r"^(?:error|warning|info)\b:?\s*")
_CAST_NAN = re.compile(r"(?<![\d.])-9223372036854775808\b")

# The positive sign of inference: transformers' generation (generation/utils.py, the old
# generation_utils.py) or one of its pipelines. A function named generate or sample elsewhere (a
# captioning model's own sampling loop) is no such sign: training loops sample too.
_GENERATION_PATH = re.compile(r"[\\/]transformers[\\/](?:generation[\\/]\w{1,60}|generation_utils|"
                              r"pipelines[\\/]\w{1,60})\.py$")
# Frames of training: a backward pass, an optimizer's step, an optimizer handed to a function, a
# function or script named for training. (An autograd path is no sign: generate() runs under
# torch.no_grad, whose decorator lives there.)
_TRAINING_PATH = re.compile(r"[\\/]torch[\\/]optim[\\/]")
# The words of a function or script name (split at '_', '-' and case changes) that name training:
# run_epoch, train_one_epoch, reinforce_step, ppo_loop.py, rl_training.py. ("update" and "fit" are
# not among them: a chat UI's update_chat callback generates too.)
_TRAINING_WORDS = frozenset((
    "train", "training", "trainer", "epoch", "epochs", "backward", "optimize", "optimise",
    "finetune", "finetuning", "reinforce", "ppo", "rlhf", "dpo", "grpo", "sft",
))
_NAME_WORDS = re.compile(r"[A-Z]?[a-z]{1,40}|[A-Z]{1,40}(?![a-z])")
# A source line that runs a backward pass or an optimizer's step, or hands an optimizer on.
_TRAINING_CODE = re.compile(r"\.backward\(|\b(?:optim|optimi[sz]er|scaler|scheduler)\w{0,20}\.step\("
                            r"|[(,][ \t]{0,3}(?:self\.)?optim(?:i[sz]er)?s?\b[ \t]{0,3}[,)=]")
# A training loop's progress: "epoch 3", "Epoch: [0][0/2975]", "step 100", "iter 300", "it 20",
# "global_step=5" (not a rate such as "2.61s/it").
_PROGRESS = re.compile(r"(?i)(?<![\w.])(?:epoch|step|global_step|iter(?:ation)?|it)[ \t]{0,3}[:=#]?[ \t]{0,3}\[?\d")
# A printed gradient norm ("grad_norm 7.9", "'grad_norm': 8812.4", "gradient norm: 1.2e3", "gnorm=3.1").
_GRAD_NORM = re.compile(
    r"(?i)(?<![\w.])(?:grad(?:ient)?[ _]?norm|gnorm|total_norm)['\"\]]?"
    r"(?:[ \t]{0,3}[:=][ \t]{0,3}|[ \t]{1,3})(?:tensor\()?['\"]?"
    r"(?P<value>[-+]?(?:nan|inf(?:inity)?|(?:\d{1,30}\.?\d{0,30}|\.\d{1,30})(?:e[-+]?\d{1,4})?))(?![\w.])"
)
# Source lines that compute position or token-type embeddings (BERT, RoBERTa, DistilBERT, GPT-2...).
_POSITION_CODE = re.compile(r"\b(?:position_embeddings|position_embeds|token_type_embeddings|buffered_token_type_ids)"
                            r"\b|\bself\.(?:position_ids|token_type_ids|wpe)\b")
_TOO_LONG = re.compile(r"Token indices sequence length is longer than the specified maximum sequence length "
                       r"for this model \((?P<length>\d{1,12}) > (?P<limit>\d{1,12})\)")
_HALF = re.compile(r"\btorch\.float16\b|\btorch\.half\b|\.half\(\)|\btorch_dtype\s{0,3}=\s{0,3}['\"]float16['\"]"
                   r"|\bfp16\s{0,3}=\s{0,3}True\b|\btorch\.(?:cuda\.)?HalfTensor\b")
_NOT_INITIALISED = re.compile(r"Some weights of \S{1,200} were not initiali[sz]ed from the model checkpoint"
                              r"|\bnewly initiali[sz]ed\b")
# Sampling settings written out (in a traceback's code line, a config print): their values are read
# and judged (a temperature of 1e-3 or less, a top_p of 0).
_SAMPLING = re.compile(r"\b(?P<name>temperature|top_p)\s{0,3}[=:]\s{0,3}"
                       r"(?P<value>\d{0,4}\.?\d{0,12}(?:e-?\d{1,3})?)(?![\w.])")
# The temperature at or below which sampling divides logits into overflow.
COLD = 1e-3
# The sizes of a mismatch in an element-wise operation or an expand, and the dimension.
_MISMATCH = re.compile(r"The (?:size of tensor a|expanded size of the tensor) \((?P<a>\d{1,12})\) must match the "
                       r"(?:size of tensor b|existing size) \((?P<b>\d{1,12})\) at non-singleton dimension "
                       r"(?P<dimension>\d{1,3})")
# The target a loss rejected, and the ignore_index a log declares (an argparse Namespace, a config,
# a call's keyword written out; torch's own "ignore_index=self.ignore_index" names no value).
_TARGET = re.compile(r"\bTarget (?P<target>-?\d{1,20}) is out of bounds")
_IGNORE_INDEX = re.compile(r"\bignore_index['\"]?\s{0,3}[=:]\s{0,3}(?P<value>-?\d{1,20})(?![\w.])")
# The value masks use for "ignore" besides negative ones (-1, -100): 255, the largest of 8 bits.
_IGNORE_VALUES = (255,)
# The two shapes default_collate's torch.stack could not join.
_STACK = re.compile(r"stack expects each tensor to be equal size, but got \[(?P<first>[\d, ]{0,200})\] "
                    r"at entry \d{1,12} and \[(?P<other>[\d, ]{0,200})\] at entry \d{1,12}")
# Whitespace a path keeps from its list line (a real blank, or the escape repr() prints): at
# its start, its end, or before the extension a loader appended ("case0005 .npz").
_BLANK = r"(?:\s|\\[rnt])"
_EDGE_WHITESPACE = (
    (re.compile(rf"^{_BLANK}"), "starts with whitespace"),
    (re.compile(rf"{_BLANK}$"), "ends with whitespace"),
    (re.compile(rf"{_BLANK}\.\w{{1,6}}$"), "has whitespace before its extension"),
)


@dataclass(frozen=True)
class Evidence:
    """One thing the log shows that speaks for or against a cause.

    Attributes:
        key: what kind of evidence (one of :data:`KEYS`).
        text: the evidence in one sentence, with the values and the line it was read from.
        line: the log line (1-based) it was read from.
        code: the check code of a :data:`LABELGUARD_ERROR` (None for every other key).
    """

    key: str
    text: str
    line: int
    code: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "text": self.text, "line": self.line, "code": self.code}


class FrameLike(Protocol):
    """What the evidence reads of a traceback frame (:class:`labelguard.explain.Frame`)."""

    @property
    def path(self) -> str: ...

    @property
    def function(self) -> str | None: ...

    @property
    def code(self) -> str | None: ...

    @property
    def at(self) -> int | None: ...

    @property
    def is_library(self) -> bool: ...

    @property
    def is_torch(self) -> bool: ...


@dataclass
class _Series:
    """The values one named loss (or the gradient norm) printed, up to its first non-finite one."""

    name: str
    finite: list[tuple[int, float]]
    nonfinite: tuple[int, str] | None = None


@dataclass
class _Context:
    """What single lines tell that other evidence is judged against, each with its line: the
    first line of a training loop's progress, the gradient norms printed, a tokenizer's warning
    (length, limit), the last size mismatch (sizes a and b, dimension), the last target a loss
    rejected and the first ignore_index the log declares."""

    progress: int | None = None
    norms: _Series = field(default_factory=lambda: _Series("gradient norm", []))
    too_long: tuple[int, int, int] | None = None
    mismatch: tuple[int, int, int, int] | None = None
    target: tuple[int, int] | None = None
    ignore_index: tuple[int, int] | None = None

    def read(self, line: str, number: int) -> None:
        # labelguard's findings count steps of their own (the tracer counts forward calls).
        if self.progress is None and _PROGRESS.search(line) and not ("LG" in line and _REPORTED.search(line)):
            self.progress = number
        if "norm" in line.lower():
            _read_series(_GRAD_NORM, line, number, self.norms)
        if self.too_long is None and "Token indices" in line and (long := _TOO_LONG.search(line)):
            self.too_long = (number, int(long.group("length")), int(long.group("limit")))
        if "must match" in line and (mismatch := _MISMATCH.search(line)):
            self.mismatch = (number, int(mismatch.group("a")), int(mismatch.group("b")),
                             int(mismatch.group("dimension")))
        if "Target " in line and (target := _TARGET.search(line)):
            self.target = (number, int(target.group("target")))
        if self.ignore_index is None and "ignore_index" in line and (declared := _IGNORE_INDEX.search(line)):
            self.ignore_index = (number, int(declared.group("value")))

    def printed_training(self, series: dict[str, _Series]) -> bool:
        """True when the log prints a loop's progress, a loss or a gradient norm."""
        return (self.progress is not None or bool(self.norms.finite or self.norms.nonfinite)
                or any(s.finite or s.nonfinite for s in series.values()))


def gather(text: str, frames: Sequence[FrameLike] = ()) -> tuple[Evidence, ...]:
    """The evidence of an already normalised log and its traceback ``frames``, in the order of
    :data:`KEYS` (the errors labelguard raised in the order of the log)."""
    series: dict[str, _Series] = {}
    found: dict[str, Evidence] = {}
    raised: dict[str, Evidence] = {}
    setup = _Modules()
    context = _Context()
    missing: set[str] = set()
    mentioned: tuple[int, str] | None = None
    reductions: list[tuple[int, str]] = []
    for number, line in enumerate(text.split("\n"), 1):
        if "oss" in line or "OSS" in line:
            _read_losses(line, number, series)
            if mentioned is None and (said := _nonfinite_message(line)):
                mentioned = (number, said)
            if (scale := _SCALE_REDUCED.search(line)) and any(s.finite for s in series.values()):
                reductions.append((number, next(value for value in scale.groups() if value)))
            if DETECTION_LOSSES not in found and (hit := _BOX_LOSS.search(line)):
                found[DETECTION_LOSSES] = Evidence(
                    DETECTION_LOSSES, f"line {number} prints a box loss ({hit.group(0)}): the run trains "
                    "an object detector, whose box targets come from the annotations", number)
        if "No such file" in line:
            hit = _NO_SUCH_FILE.search(line)
            if hit:
                missing.add(hit.group("path"))
                _path_evidence(found, hit.group("path"), number, MISSING_FILE,
                               f"line {number}: {hit.group('path')!r} was not found")
        if any(word in line for word in _LOAD_WORDS):
            hit = _UNABLE_TO_LOAD.search(line)
            if hit:
                _path_evidence(found, hit.group("path"), number, UNREADABLE_FILE,
                               f"line {number}: could not load{hit.group('what').rstrip()} "
                               f"{hit.group('path')!r}")
        if "LG" in line:
            _code_evidence(found, raised, setup, line, number)
        _context_evidence(found, line, number)
        context.read(line, number)
        if "9223372036854775808" in line and CAST_NAN not in found and _CAST_NAN.search(line):
            found[CAST_NAN] = Evidence(
                CAST_NAN, f"line {number} shows -9223372036854775808, what NaN becomes when cast "
                "to a 64-bit integer (a label or index that held NaN before .long())", number)
    if len(missing) > 1:
        last = found[MISSING_FILE]
        found[MISSING_FILE] = Evidence(MISSING_FILE, f"{last.text} (and {plural(len(missing) - 1, 'other path')})",
                                       last.line)
    if mentioned is not None:
        _add_mentioned(series, *mentioned)
    if reductions:
        (first_cut, _), (last_cut, lowest) = reductions[0], reductions[-1]
        found[LOSS_SCALE_REDUCED] = Evidence(
            LOSS_SCALE_REDUCED, f"line {first_cut}: the fp16 loss scaler cut its scale after a gradient overflow "
            f"during training ({plural(len(reductions), 'time')}, to {lowest} by line {last_cut}): fp16 overflowed",
            first_cut)
    for item in _loss_evidence(series, context.norms):
        found.setdefault(item.key, item)
    if (tied := setup.tied()) is not None:
        found[FROZEN_AT_FAILURE] = tied
    _target_evidence(found, context)
    _frame_evidence(found, frames, context, context.printed_training(series))
    return (*raised.values(), *(found[key] for key in KEYS if key in found))


def _read_losses(line: str, number: int, series: dict[str, _Series]) -> None:
    for hit in _LOSS.finditer(line):
        before = _LOSS_NAME.search(line, max(0, hit.start() - 18), hit.start())
        name = f"{before.group('name')} loss" if before else "loss"
        _add_value(series.setdefault(name.lower(), _Series(name, [])), hit.group("value"), number)


def _read_series(pattern: re.Pattern, line: str, number: int, series: _Series) -> None:
    for hit in pattern.finditer(line):
        _add_value(series, hit.group("value"), number)


def _add_value(series: _Series, raw: str, number: int) -> None:
    if series.nonfinite is not None:
        return
    value = float(raw)
    if math.isfinite(value):
        series.finite.append((number, value))
    else:
        series.nonfinite = (number, raw)


def _nonfinite_message(line: str) -> str | None:
    """The words of a line that report a non-finite loss, in any form of :data:`NONFINITE_LOSS_MESSAGES`."""
    hit = next((found for pattern in _NONFINITE_LOSS if (found := pattern.search(line))), None)
    return hit.group(0) if hit else None


def _add_mentioned(series: dict[str, _Series], line: int, said: str) -> None:
    """A non-finite loss reported without a value the series read ("Loss became infinite or
    NaN", "nan loss", "Loss is NaN."): it ends the series that printed most before it, so
    that series is not taken as finite to the error. With no value printed before it,
    nothing says where it stood (from the start or not), and no series is made up."""
    if any(s.nonfinite is not None and s.nonfinite[0] <= line for s in series.values()):
        return
    before = [(sum(1 for number, _ in s.finite if number < line), s) for s in series.values()]
    count, main = max(before, key=lambda item: item[0], default=(0, None))
    if main is None or count == 0:
        return
    main.finite = [(number, value) for number, value in main.finite if number < line]
    main.nonfinite = (line, repr(said))


def _loss_evidence(series: dict[str, _Series], norms: _Series) -> list[Evidence]:
    """NaN from the start, growth before the NaN (the series that grew most; the gradient
    norm's too), a steady run (before the NaN, or up to the error when no loss was non-finite)
    when nothing grew, and a run of finite values (training ran before the error)."""
    evidence: list[Evidence] = []
    nonfinite = sorted((s for s in series.values() if s.nonfinite), key=lambda s: _nonfinite(s)[0])
    if nonfinite:
        first = nonfinite[0]
        line, raw = _nonfinite(first)
        after = f"after {plural(len(first.finite), 'finite value')}" if first.finite else "its first printed value"
        evidence.append(Evidence(
            LOSS_NONFINITE, f"line {line}: {first.name}: {raw}, the first non-finite loss, {after}", line))
        from_start = next((s for s in nonfinite if not s.finite), None)
        if from_start is not None:
            line, raw = _nonfinite(from_start)
            evidence.append(Evidence(
                LOSS_NAN_FROM_START, f"line {line}: {from_start.name} was {raw} from its first "
                "printed value: the first steps already failed", line))
    grown = [(growth, s) for s in series.values() if (growth := _growth(s.finite)) is not None]
    if grown:
        (ratio, (low_line, low), (high_line, high)), grew = max(grown, key=lambda item: item[0][0])
        evidence.append(Evidence(
            LOSS_GREW, f"{grew.name} grew from {low:g} (line {low_line}) to {high:g} (line {high_line}), "
            f"{_factor(ratio)}" + (" before it became non-finite" if grew.nonfinite else ""), high_line))
    norm_growth = _growth(norms.finite)
    if norm_growth is not None:
        ratio, (low_line, low), (high_line, high) = norm_growth
        evidence.append(Evidence(
            GRAD_NORM_GREW, f"the {norms.name} grew from {low:g} (line {low_line}) to {high:g} (line {high_line}), "
            f"{_factor(ratio)}: the gradients grew by orders of magnitude before the error", high_line))
    trained = max(series.values(), key=lambda s: len(s.finite), default=None)
    if not grown and norm_growth is None and (steady := _steady(nonfinite[0] if nonfinite else trained)) is not None:
        evidence.append(steady)
    if (trained is None or len(trained.finite) < 2) and len(norms.finite) >= 2:
        trained = norms
    if trained is not None and len(trained.finite) >= 2:
        evidence.append(Evidence(
            TRAINED, f"{trained.name} printed {plural(len(trained.finite), 'finite value')} "
            f"(lines {trained.finite[0][0]}-{trained.finite[-1][0]}): training ran before the error",
            trained.finite[0][0]))
    return evidence


def _factor(ratio: float) -> str:
    """A growth factor as people read it: 1,830x, or 7.3e+24x past a million."""
    return f"{ratio:,.0f}x" if ratio < 1e6 else f"{ratio:.2g}x"


def _steady(series: _Series | None) -> Evidence | None:
    """LOSS_STEADY for a series that became non-finite, LOSS_STABLE for one that did not, when
    it printed :data:`STEADY_VALUES` finite values or more within :data:`STABLE_RANGE` of each other."""
    values = [abs(v) for _, v in series.finite] if series is not None else []
    if series is None or len(values) < STEADY_VALUES or not 0 < min(values) or max(values) > STABLE_RANGE * min(values):
        return None
    low, high = min(values), max(values)
    lines = f"lines {series.finite[0][0]}-{series.finite[-1][0]}"
    if series.nonfinite is not None:
        return Evidence(
            LOSS_STEADY, f"{series.name} stayed between {low:g} and {high:g} over "
            f"{plural(len(values), 'printed value')} ({lines}) before it became non-finite: no growth "
            "the log shows (values printed between them are not in the log)", series.nonfinite[0])
    return Evidence(
        LOSS_STABLE, f"{series.name} stayed finite between {low:g} and {high:g} over "
        f"{plural(len(values), 'printed value')} ({lines}) and no non-finite loss was printed: training "
        "ran steadily until one step failed", series.finite[-1][0])


def _nonfinite(series: _Series) -> tuple[int, str]:
    """The first non-finite value of a series picked for having one."""
    # Not a user mistake: only series whose non-finite value is set reach here.
    assert series.nonfinite is not None
    return series.nonfinite


def _growth(values: list[tuple[int, float]]) -> tuple[float, tuple[int, float], tuple[int, float]] | None:
    """(factor, lowest point, later peak) of the largest growth by :data:`GROWTH` or more."""
    best = None
    low: tuple[int, float] | None = None
    for line, value in values:
        magnitude = abs(value)
        if magnitude > 0 and (low is None or magnitude < low[1]):
            low = (line, magnitude)
        elif low is not None and magnitude / low[1] >= GROWTH and (best is None or magnitude / low[1] > best[0]):
            best = (magnitude / low[1], low, (line, magnitude))
    return best


def _path_evidence(found: dict[str, Evidence], path: str, number: int, key: str, text: str) -> None:
    """The last such line names the path (the error message comes after the code that
    raised it in a traceback); any of them can show whitespace."""
    found[key] = Evidence(key, text, number)
    if PATH_WHITESPACE in found:
        return
    for pattern, what in _EDGE_WHITESPACE:
        if pattern.search(path):
            found[PATH_WHITESPACE] = Evidence(
                PATH_WHITESPACE, f"line {number}: the path {path!r} {what}, which a file list's line "
                "keeps when its reader does not strip it", number)
            return


_CODE_KEYS = {"LG504": FROZEN_REPORTED, "LG507": FROZEN_REPORTED, "LG508": DIVERGENCE_REPORTED,
              "LG509": BAD_INPUT_REPORTED, "LG204": CAST_NAN}


class _Modules:
    """The modules the setup findings (LG504, LG507) name and those the failure findings (LG502,
    LG508) locate, each with the line that named it first."""

    def __init__(self) -> None:
        self.frozen: dict[str, tuple[int, str]] = {}
        self.located: dict[str, int] = {}

    def tied(self) -> Evidence | None:
        """FROZEN_AT_FAILURE when a located module is a frozen one or lies inside one."""
        for name, line in self.located.items():
            for frozen, (frozen_line, code) in self.frozen.items():
                if name == frozen or name.startswith(frozen + "."):
                    where = "the module" if name == frozen else f"inside '{frozen}', the module"
                    return Evidence(
                        FROZEN_AT_FAILURE, f"line {line}: labelguard located the failure in '{name}', {where} "
                        f"whose freeze does nothing or whose frozen parameters are optimised ({code}, line "
                        f"{frozen_line}): parameters meant to stay fixed were trained", line)
        return None


def _code_evidence(found: dict[str, Evidence], raised: dict[str, Evidence], setup: _Modules, line: str,
                   number: int) -> None:
    """The codes labelguard reported on one line: an error it raised, what its findings tell
    about the failure, and the modules they name."""
    hits = list(_REPORTED.finditer(line))
    if not hits:
        return
    if "labelguard" in line and (error := _RAISED.search(line)):
        code = error.group("error") or error.group("note")
        if code not in raised:
            said = _message(line, error.end())
            if error.group("note"):
                raised[code] = Evidence(LABELGUARD_NOTE, f"line {number}: labelguard.torch.guard's note ({code}) on "
                                        f"the error the dataset raised: {cut(said, 260)}", number, code=code)
            else:
                _raised(found, raised, code, said, number)
    for position, hit in enumerate(hits):
        code = hit.group("code")
        end = hits[position + 1].start() if position + 1 < len(hits) else len(line)
        said = _message(line[:end], hit.end())
        if _COUNT_ONLY.search(said):
            continue  # an error that counts findings: they follow it, one a line
        counted = raised.get(code)
        if counted is not None and counted.key == LABELGUARD_ERROR and _COUNT_ONLY.search(counted.text):
            _raised(found, raised, code, said, number)
        if code in _SETUP_CODES:
            for name in [*_QUOTED_MODULE.findall(said), *_PARAMETER.findall(said)]:
                setup.frozen.setdefault(name, (number, code))
        elif code in ("LG502", "LG508"):
            for name in _LOCATED.findall(said):
                setup.located.setdefault(name, number)
        if code == "LG502":
            _nonfinite_reading(found, said, line[hit.end():end], number)
        key = _CODE_KEYS.get(code)
        stopped = found.get(FROZEN_AT_FAILURE)
        if key == FROZEN_REPORTED and stopped is not None and stopped.line == number:
            continue  # the finding the run stopped on is shown as such, not again as context
        if key is not None and key not in found:
            found[key] = Evidence(key, f"line {number}: labelguard reported {code}: {cut(said, 240)}", number)


def _raised(found: dict[str, Evidence], raised: dict[str, Evidence], code: str, said: str, number: int) -> None:
    """The error labelguard raised with ``code``; a freeze (LG504, LG507) that stopped the run is
    tied to the failure: it is the failure."""
    raised[code] = Evidence(LABELGUARD_ERROR, f"line {number}: labelguard.torch raised {code}: {cut(said, 260)}",
                            number, code=code)
    if code in _SETUP_CODES and not _COUNT_ONLY.search(said):
        found[FROZEN_AT_FAILURE] = Evidence(
            FROZEN_AT_FAILURE, f"line {number}: labelguard.torch raised {code} and stopped the run on this setup "
            f"finding: {cut(said, 240)}", number)


def _message(line: str, start: int) -> str:
    """A finding's message: the text after its code and severity ("LG507 error: ..."), without
    the hint labelguard appended."""
    said = " ".join(line[start:].split(" Hint: ", 1)[0].split()).strip(" :;")
    return _SEVERITY.sub("", said, count=1)


# What labelguard's tracer and watch say about a non-finite value (LG502), in their own words, and
# the evidence each piece of wording is: (key, words in the message or hint, what it means).
_NONFINITE_READINGS = (
    (BAD_INPUT_REPORTED, ("the model input is already non-finite",),
     "labelguard.torch found the model input already non-finite (LG502): the batch held NaN/Inf"),
    (NONFINITE_WEIGHTS, ("its parameter ",),
     "labelguard.torch found non-finite parameters in the module that produced the NaN (LG502)"),
    (DIVERGENCE_REPORTED, ("magnitudes had exploded", "overflowed from exploded outputs"),
     "labelguard.torch saw activations explode before the non-finite value (LG502)"),
    (DIVERGENCE_REPORTED, ("The growth reported before it (LG508) ended in an overflow",),
     "labelguard.torch.watch saw the growth it reported (LG508) end in the non-finite value (LG502)"),
    (NO_GROWTH_REPORTED, ("The steps before it show no growth",),
     "labelguard.torch.watch saw no growth in the steps before the non-finite value (LG502)"),
    (UNSAFE_OP_REPORTED, ("computation produced it", "gave a non-finite output: an unsafe operation",
                          "look at the tensor operations in that forward"),
     "labelguard.torch saw finite inputs and parameters of ordinary size give the non-finite value (LG502)"),
)


def _nonfinite_reading(found: dict[str, Evidence], message: str, whole: str, number: int) -> None:
    """The evidence an LG502 line of labelguard's tracer or watch holds (``whole``: the finding
    with its hint, whose wording says what the steps before it showed)."""
    for key, words, meaning in _NONFINITE_READINGS:
        if key not in found and any(word in whole for word in words):
            found[key] = Evidence(key, f"line {number}: {meaning}: {cut(message, 200)}", number)


def _context_evidence(found: dict[str, Evidence], line: str, number: int) -> None:
    """What one line tells besides losses, paths and codes: the precision, weights a checkpoint
    did not hold, the sampling settings, a sequence too long, the shapes a stack could not join."""
    if HALF_PRECISION not in found and ("16" in line or "half" in line) and (hit := _HALF.search(line)):
        found[HALF_PRECISION] = Evidence(
            HALF_PRECISION, f"line {number}: the model runs in float16 ({hit.group(0)}): values beyond 65504 "
            "overflow to inf", number)
    if WEIGHTS_NOT_LOADED not in found and "initiali" in line and _NOT_INITIALISED.search(line):
        found[WEIGHTS_NOT_LOADED] = Evidence(
            WEIGHTS_NOT_LOADED, f"line {number}: weights the checkpoint did not hold were newly initialised: "
            f"{cut(' '.join(line.split()), 160)}", number)
    if SAMPLING_SETTINGS not in found and ("temperature" in line or "top_p" in line):
        for hit in _SAMPLING.finditer(line):
            value = _number(hit.group("value"))
            if value is not None and (value <= COLD if hit.group("name") == "temperature" else value == 0):
                found[SAMPLING_SETTINGS] = Evidence(
                    SAMPLING_SETTINGS, f"line {number}: sampling with {hit.group(0)}: "
                    + ("logits divided by a temperature of about zero overflow" if hit.group("name") == "temperature"
                       else "a top_p of 0 keeps no token"), number)
                break
    if SEQUENCE_TOO_LONG not in found and "Token indices" in line and (long := _TOO_LONG.search(line)):
        found[SEQUENCE_TOO_LONG] = Evidence(
            SEQUENCE_TOO_LONG, f"line {number}: the tokenizer made a sequence of {long.group('length')} tokens, "
            f"longer than the model's {long.group('limit')}", number)
    if "stack expects" in line and (stack := _STACK.search(line)):
        _stack_evidence(found, stack, number)


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _stack_evidence(found: dict[str, Evidence], stack: re.Match, number: int) -> None:
    """Which dimensions of the two shapes torch.stack could not join differ: the evidence states
    the shapes and those dimensions, and the causes say what such samples usually are."""
    first, other = ([int(n) for n in re.findall(r"\d+", stack.group(name))] for name in ("first", "other"))
    shapes = f"[{stack.group('first')}] and [{stack.group('other')}]"
    differ = [axis for axis, (a, b) in enumerate(zip(first, other)) if a != b]
    rank = len(first)
    if rank != len(other):
        key, seen = STACK_RANKS, f"tensors of {len(first)} and {len(other)} dimensions: one has an axis the other lacks"
    elif differ == [rank - 1]:
        key, seen = STACK_LENGTHS, (f"they differ only in the last dimension ({first[-1]} against {other[-1]}): a "
                                    "length that varies from sample to sample")
    elif rank == 2 and differ == [0, 1]:
        key, seen = STACK_MAP_SIZES, f"they differ in both dimensions ({_size(first)} against {_size(other)})"
    elif rank == 3 and differ == [1, 2] and first[0] <= 4:
        key, seen = STACK_IMAGE_SIZES, (f"they differ in the last two dimensions ({_size(first[1:])} against "
                                        f"{_size(other[1:])}) and share a first dimension of {first[0]}")
    elif rank == 3 and differ == [0] and max(first[0], other[0]) <= 4:
        key, seen = STACK_CHANNELS, f"they differ only in the first dimension ({first[0]} against {other[0]})"
    else:
        return
    found.setdefault(key, Evidence(key, f"line {number}: the stacked shapes are {shapes}: {seen}", number))


def _size(shape: Sequence[int]) -> str:
    return "x".join(str(n) for n in shape)


def _target_evidence(found: dict[str, Evidence], context: _Context) -> None:
    """The target a loss rejected, against the ignore_index the log declares: an ignore value
    (negative, 255) that reached the loss unignored, or a non-negative id that is none."""
    if context.target is None:
        return
    number, target = context.target
    declared = ""
    if context.ignore_index is not None:
        declared_line, ignore = context.ignore_index
        declared = f"ignore_index={ignore} (line {declared_line})"
    if target < 0 or target in _IGNORE_VALUES:
        if context.ignore_index is None:
            said = "and the log declares no ignore_index"
        elif context.ignore_index[1] == target:
            said = f"the log's own {declared}: the value reached a loss that was not given it"
        else:
            said = f"while the log declares {declared}"
        found[TARGET_IGNORE_VALUE] = Evidence(
            TARGET_IGNORE_VALUE, f"line {number}: the target the loss rejected is {target}, a value datasets use "
            f"for 'ignore' or 'no label', {said}", number)
    else:
        said = f"; the log declares {declared}" if declared else ""
        found[TARGET_CLASS_ID] = Evidence(
            TARGET_CLASS_ID, f"line {number}: the target the loss rejected is {target}, no ignore value (negative "
            f"or 255){said}: a class id at or past the number of classes", number)


def _frame_evidence(found: dict[str, Evidence], frames: Sequence[FrameLike], context: _Context,
                    printed_training: bool) -> None:
    """What the traceback's frames show: the embeddings of positions raising the error, and
    transformers' generation with no sign of training anywhere in the log."""
    raising = next((f for f in reversed(frames) if not f.is_torch), None)
    if raising is not None and raising.at is not None and raising.code and _POSITION_CODE.search(raising.code):
        code = cut(raising.code, 100)
        found[POSITION_FRAMES] = Evidence(
            POSITION_FRAMES, f"line {raising.at}: the error was raised in the model's position or token-type "
            f"embeddings ({code})", raising.at)
        sequence = _sequence_axis(context)
        if sequence is not None:
            number, said = sequence
            found[POSITION_SEQUENCE_MISMATCH] = Evidence(
                POSITION_SEQUENCE_MISMATCH, f"line {number}: {said}, raised in the model's position or token-type "
                f"embeddings ({code}, line {raising.at})", number)
    if context.mismatch is not None and context.too_long is not None:
        number, a, b, _ = context.mismatch
        warned, length, limit = context.too_long
        if {a, b} == {length, limit}:
            found[MISMATCH_SIZES_OF_LONG_SEQUENCE] = Evidence(
                MISMATCH_SIZES_OF_LONG_SEQUENCE, f"line {number}: the sizes that did not match ({a} and {b}) are "
                f"the sequence length and the model's maximum the tokenizer warned about (line {warned})", number)
    generating = next((f for f in frames if f.at is not None and _GENERATION_PATH.search(f.path)), None)
    if generating is None or generating.at is None or printed_training:
        return
    if any(_trains(f) for f in frames):
        return
    found[INFERENCE] = Evidence(
        INFERENCE, f"line {generating.at}: the traceback runs transformers' {generating.function or 'generation'} "
        f"({_tail(generating.path)}); no training frame seen (no backward pass, optimizer or training loop) "
        "and the log prints no training progress, loss or gradient norm: inference, as far as the log shows",
        generating.at)


def _sequence_axis(context: _Context) -> tuple[int, str] | None:
    """The line of the last size mismatch and what makes it one of the sequence axis: the sizes a
    tokenizer warned about, or dimension 1 of the embeddings' (batch, sequence, ...) tensors; None
    without either."""
    if context.mismatch is None:
        return None
    number, a, b, dimension = context.mismatch
    if context.too_long is not None and {a, b} == set(context.too_long[1:]):
        return number, (f"the sizes {a} and {b} did not match, the sequence length and the model's maximum the "
                        f"tokenizer warned about (line {context.too_long[0]})")
    if dimension == 1:
        return number, (f"the sizes {a} and {b} did not match at dimension 1, the sequence axis of (batch, sequence) "
                        "inputs")
    return None


def _tail(path: str) -> str:
    """The last two parts of a path (``generation/utils.py``)."""
    return "/".join(path.replace("\\", "/").split("/")[-2:])


def _trains(frame: FrameLike) -> bool:
    """A frame of training: in torch.optim, running a backward pass or an optimizer's step or
    handing an optimizer on, or named with a word of training: its script (trainer.py,
    ppo_loop.py) or, for the user's own code, its function (run_epoch, reinforce_step; a
    library's function names are no sign: they name its internals)."""
    if _TRAINING_PATH.search(frame.path) or (frame.code is not None and _TRAINING_CODE.search(frame.code)):
        return True
    names = [re.split(r"[\\/]", frame.path)[-1].rsplit(".", 1)[0]]
    if not frame.is_library:
        names.append((frame.function or "").split(".")[-1])
    return any(word.lower() in _TRAINING_WORDS for name in names for word in _NAME_WORDS.findall(name))
