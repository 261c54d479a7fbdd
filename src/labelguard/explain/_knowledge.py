"""The knowledge base of ``labelguard explain``: error signatures mapped to ranked causes.

This module is data. Each :class:`Entry` names one fault as PyTorch reports it, with the
regular expressions that recognise it and the causes that produce it, most frequent first.
The matcher (:mod:`labelguard.explain._engine`) reads these records and never special-cases an
entry, so a new fault is one more record here plus a real log in ``tests/explain/logs``.

Each :class:`Cause` has a stable id (kebab-case; one id, one cause, wherever it is listed) that
the JSON output and the corpus of ``tests/explain/corpus`` name.

Signatures match on what stays stable across torch releases: the assertion condition as it
is printed, the kernel's file and function name, and the host-side message. Line numbers
change with every release and are never part of a signature.

Signature kinds, from strongest to weakest:

* ``conditions``: the text inside ``Assertion `...` failed`` (the CUDA kernel assertion), or the
  check code of an error labelguard raised (its own check's failed condition);
* ``messages``: a CPU or host error message; named groups become extracted facts;
* ``kernels``: the kernel source file or function name;
* ``frames``: a torch function named in the Python traceback (weak: the traceback of an
  asynchronous CUDA error can point past the failing kernel).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping

from labelguard.explain._evidence import (
    BAD_INPUT_REPORTED,
    CAST_NAN,
    DETECTION_LOSSES,
    DIVERGENCE_REPORTED,
    FROZEN_AT_FAILURE,
    FROZEN_REPORTED,
    GRAD_NORM_GREW,
    HALF_PRECISION,
    INFERENCE,
    LABELGUARD_ERROR,
    LABELGUARD_NOTE,
    LOSS_GREW,
    LOSS_NAN_FROM_START,
    LOSS_NONFINITE,
    LOSS_SCALE_REDUCED,
    LOSS_STABLE,
    LOSS_STEADY,
    MISMATCH_SIZES_OF_LONG_SEQUENCE,
    NO_GROWTH_REPORTED,
    NONFINITE_LOSS_MESSAGES,
    NONFINITE_WEIGHTS,
    PATH_WHITESPACE,
    POSITION_FRAMES,
    POSITION_SEQUENCE_MISMATCH,
    SAMPLING_SETTINGS,
    SEQUENCE_TOO_LONG,
    STACK_CHANNELS,
    STACK_IMAGE_SIZES,
    STACK_LENGTHS,
    STACK_MAP_SIZES,
    STACK_RANKS,
    TARGET_CLASS_ID,
    TARGET_IGNORE_VALUE,
    TRAINED,
    UNSAFE_OP_REPORTED,
    WEIGHTS_NOT_LOADED,
)

# The commands the causes refer to, kept in one place so the wording follows the CLI.
AUDIT = "labelguard audit DATA --num-classes N"
AUDIT_IGNORE = "labelguard audit DATA --num-classes N --ignore-index 255"
AUDIT_SPLITS = "labelguard audit DATA --num-classes N, on every split (train, val, test)"
GUARD = "labelguard.torch.guard(dataset, num_classes=N)"
PREFLIGHT = "labelguard.torch.preflight(model, loss_fn, loader, num_classes=N)"
CHECKED = "labelguard.torch.checked(loss_fn, num_classes=N)"
RECORD = "labelguard.torch.record(loader, PATH), then labelguard replay PATH"
AUDIT_TOKENS = "labelguard audit TOKENIZED_DATA --model-config MODEL_DIR --tokenizer tokenizer.json"
PREFLIGHT_TOKENS = "labelguard.torch.preflight(model, loss_fn, loader)"
GUARD_TOKENS = "labelguard.torch.guard(tokenized_dataset, model=model)"
GUARD_COLLATE = ("DataLoader(dataset, batch_size=B, collate_fn=labelguard.torch.guard_collate()) names the two "
                 "samples (index and file) and both shapes when a batch fails (LG206)")


@dataclass(frozen=True)
class Cause:
    """One way a fault comes about.

    Attributes:
        id: stable identifier (kebab-case), used in JSON output and tests.
        title: the cause in one line, stated as a fact to check ("a target id >= ...").
        why: how this cause produces exactly this error.
        confirm: the labelguard command (or plain check) that confirms it on the user's data.
        codes: the check codes (``../shared/spec/checks.md``) that report it; may be empty
            when no labelguard check covers the cause, and ``confirm`` then says so.
        fix: what to change.
        prefer_when: regular expressions on the log; when one matches, this cause is ranked
            before the causes of its entry that have no matching preference.
        supported_by: keys of evidence (:mod:`labelguard.explain._evidence`) tied to the
            failure that make this cause likely when the log shows them.
        weakened_by: keys of evidence that make it less likely than the others, unless
            evidence of ``supported_by`` outweighs them.
        contradicted_by: keys of evidence that make it less likely whatever supports it (no
            training step ran, so this run's training did not diverge).
        noted_by: keys of evidence shown with this cause that do not move it: they make it
            worth listing but do not tell it from the others, or are not tied to the failure
            (a freeze labelguard reported at start-up says nothing of where a NaN came from).
        needs_evidence: True for a cause offered only when the log shows one of its
            ``offered_by`` (a cause nothing in a bare error points at).
        offered_by: with ``needs_evidence``, the keys of evidence that offer the cause
            (empty: its ``supported_by`` and ``noted_by``).
        reports: for the cause that is labelguard's own finding: a regular expression of the
            check codes it stands for. The engine makes one cause of each error labelguard
            raised with such a code (the ``supported_by`` evidence that carries it), its
            fields formatted with the check's documentation (``{code}``, ``{name}``,
            ``{summary}``, ``{why}``, ``{fix}``) and its id suffixed with the code.
        fix_for_value: (value, the values ``fix`` names, a fix with ``{value}``) for a log
            whose matched message carried ``value`` and it is none of those: "Remap 255 to
            1" is no fix for a target of 192, the fix worded for the value seen is.
    """

    id: str
    title: str
    why: str
    confirm: str
    codes: tuple[str, ...]
    fix: str
    prefer_when: tuple[str, ...] = ()
    supported_by: tuple[str, ...] = ()
    weakened_by: tuple[str, ...] = ()
    contradicted_by: tuple[str, ...] = ()
    noted_by: tuple[str, ...] = ()
    needs_evidence: bool = False
    offered_by: tuple[str, ...] = ()
    reports: str = ""
    fix_for_value: tuple[str, tuple[str, ...], str] | None = None

    def fix_for(self, values: Mapping[str, str]) -> str:
        """The fix for a log whose matched messages carried ``values``."""
        if self.fix_for_value is not None:
            name, named, fix = self.fix_for_value
            if name in values and values[name] not in named:
                return fix.format(value=values[name])
        return self.fix

    @property
    def offering(self) -> tuple[str, ...]:
        """The keys of evidence that offer a cause that needs evidence."""
        return self.offered_by or self.supported_by + self.noted_by


def when_seen(cause: Cause, *keys: str) -> Cause:
    """The same cause, offered only when the log shows evidence of ``keys`` (in an entry where
    nothing else points at it: labelguard's finding of a NaN offers the causes of a NaN)."""
    return replace(cause, needs_evidence=True, offered_by=keys)


@dataclass(frozen=True)
class Entry:
    """One fault and the signatures that recognise it.

    Attributes:
        id: stable identifier, used in JSON output and tests.
        title: what failed, in one line.
        operation: the torch operations that run the failing kernel.
        conditions, kernels, messages, frames: regular expressions (see the module doc).
        requires: regular expressions that must all match the log before any signature of
            this entry counts (CTC: an illegal memory access only says "CTC" with the frame).
        cpu_message: what the CPU prints for the same fault, when it prints anything.
        cannot_know: what a log of this fault never tells.
        told_by_values: (values, instead) pairs for when a matched message carried every one of
            ``values`` (``target`` of "Target 192 is out of bounds"): the log told part of
            what ``cannot_know``'s first item says it cannot, and ``instead`` stands in for that
            item, saying only what is still missing ("" when nothing is).
        causes: the causes, most frequent first.
        generic: True for the catch-all entries (a bare device-side assert): they are shown
            only when no specific entry matched through a condition, message or kernel.
    """

    id: str
    title: str
    operation: str
    conditions: tuple[str, ...] = ()
    kernels: tuple[str, ...] = ()
    messages: tuple[str, ...] = ()
    frames: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    cpu_message: str = ""
    cannot_know: tuple[str, ...] = ()
    told_by_values: tuple[tuple[tuple[str, ...], str], ...] = ()
    causes: tuple[Cause, ...] = ()
    generic: bool = False


# --- causes shared by several entries ---------------------------------------------------

_CLASS_ID_TOO_LARGE = Cause(
    id="class-id-too-large",
    title="a label is >= the number of classes the loss was given (off by one, a stray class, "
    "background not counted)",
    why="The loss reads the score of class `t` from a row of n_classes scores. A label equal to "
    "n_classes or larger points past the row, and the kernel stops at its bounds check. Typical: "
    "labels 0..3 with num_classes=3, a stray annotation with an extra class, or 'two classes' "
    "plus background.",
    confirm=AUDIT_SPLITS,
    codes=("LG102", "LG201", "LG101"),
    fix="Set num_classes to the number of distinct labels including background (max label + 1), "
    "or remap/drop the labels that exceed it; remove annotations of classes that are not in the "
    "dataset.",
    # A target past the classes that is no ignore value: shown here; it tells this cause from the
    # ignore value, not from a mask's storage or a head too small.
    noted_by=(TARGET_CLASS_ID,),
)

_HEAD_TOO_SMALL = Cause(
    id="head-too-small",
    title="the model outputs fewer classes than the labels use (head built with a smaller "
    "num_classes)",
    why="n_classes in the assertion is the size of the model's class axis, not the value in your "
    "config. A head left at its default (2, 80, 1000) or a config edited in one place only gives "
    "logits narrower than the label range.",
    confirm=f"{PREFLIGHT} (it compares the head's output size with num_classes and the targets: "
    "LG503), or print logits.shape[1] next to target.max()",
    codes=("LG503",),
    fix="Build the head with out_features/out_channels equal to the number of classes "
    "(background included); when loading a checkpoint with another head size, replace the head.",
)

_SEQUENCE_LABELS_PAST_HEAD = Cause(
    id="sequence-labels-past-head",
    title="sequence or token labels of a tokenized dataset past the classification head's "
    "num_labels (or -1, the datasets library's 'no label')",
    why="A transformers head has num_labels outputs; a label column with more classes than the "
    "head (num_labels left at its default 2), or an unlabelled test split's -1, indexes past the "
    "logits in the model's own cross-entropy.",
    confirm=f"{AUDIT_TOKENS} (LG604 names the rows; the dataset's ClassLabel counts too), or "
    f"{PREFLIGHT_TOKENS}, which reads num_labels from the model",
    codes=("LG604",),
    fix="Build the model with num_labels equal to the label column's classes (and id2label), and "
    "mark what has no label with -100.",
)

_IGNORE_VALUE_NOT_IGNORED = Cause(
    id="ignore-value-not-ignored",
    title="an ignore/unknown value (255, -1, -100) reaches the loss without being its ignore_index",
    why="Masks mark borders or unlabelled pixels with 255, and detection/NLP code uses -1 or "
    "-100 for 'no label'. The loss only skips the value given as ignore_index (default -100); "
    "any other such value is checked as a class id and fails.",
    confirm=f"{AUDIT_IGNORE} (LG201 lists the values outside the spec; LG103 the negative ids)",
    codes=("LG201", "LG103"),
    fix="Pass ignore_index=255 (or the value you use) to the loss, or map the value to the "
    "loss's ignore_index before training.",
    # A segmentation kernel (masks carry ignore values); a CPU message names the target, which
    # tells: an ignore value (negative, 255) supports this cause, any other contradicts it, whatever
    # ignore_index the log declares.
    prefer_when=(r"NLLLoss2d|SpatialClassNLLCriterion|nll_loss2d",),
    supported_by=(TARGET_IGNORE_VALUE,),
    contradicted_by=(TARGET_CLASS_ID,),
)

_MASK_STORAGE = Cause(
    id="mask-storage",
    title="masks stored as 0/255, saved as JPEG or resized with interpolation, so they hold "
    "values that are not class ids",
    why="A binary mask saved by an image editor holds 0 and 255; a JPEG or bilinear resize "
    "creates in-between values along every edge. Each such pixel is a target far above "
    "n_classes.",
    confirm=AUDIT,
    codes=("LG209", "LG202", "LG204", "LG203"),
    fix="Remap 255 to 1 for binary masks, store masks as PNG (never JPEG), resize masks with "
    "nearest-neighbour interpolation, and convert colour masks with an explicit colour-to-index "
    "map.",
    fix_for_value=("target", ("255",), "Map the mask's values to class ids ({value} is no class id: a grey or "
                   "colour mask holds such values, and so does an interpolated one): store masks as PNG (never "
                   "JPEG), resize masks with nearest-neighbour interpolation, and convert colour masks with an "
                   "explicit colour-to-index map."),
    # Masks in the code ("mask", "masks_pred", "true_masks"), not an attention_mask.
    prefer_when=(r"NLLLoss2d|SpatialClassNLLCriterion|nll_loss2d", r"\b(?:true_|gt_|target_)?masks?(?:_\w+)?\b"),
)

_ONE_BASED = Cause(
    id="one-based-labels",
    title="labels start at 1 (1..N) while the loss expects 0..N-1",
    why="Annotation tools and COCO-style ids often number classes from 1. With N outputs, "
    "label N is one past the last column.",
    confirm=AUDIT,
    codes=("LG208", "LG102"),
    fix="Subtract 1 from every label (or build a contiguous id map, e.g. COCO category ids to "
    "0..79) in the dataset, not in the loss.",
)

_DIVERGING = Cause(
    id="training-diverged",
    title="training diverged: weights and activations grew until they overflowed to Inf/NaN "
    "(learning rate or optimizer settings too aggressive, no gradient clipping, fp16 overflow)",
    why="NaN fails every comparison, so a kernel's `0 <= x <= 1` check fails on it, and every "
    "loss computed from it is NaN. A run that trained for a while first points this way: the "
    "data did not change, the weights did.",
    confirm="labelguard.torch.watch(model, optimizer) warns when the loss, the gradient norm or "
    "a module's outputs grow by orders of magnitude, naming the module and the optimizer's "
    "settings (LG508); labelguard.torch.trace_nonfinite names the first module whose outputs "
    "exploded and the one that made the NaN (LG502)",
    codes=("LG508", "LG502"),
    fix="Lower the learning rate (and check Adam's betas and eps against their defaults), clip "
    "gradients (torch.nn.utils.clip_grad_norm_), keep the loss in fp32.",
    supported_by=(LOSS_GREW, GRAD_NORM_GREW, DIVERGENCE_REPORTED, LOSS_SCALE_REDUCED, NONFINITE_WEIGHTS),
    weakened_by=(LOSS_NAN_FROM_START, LOSS_STEADY, LOSS_STABLE, NO_GROWTH_REPORTED),
    contradicted_by=(INFERENCE,),
)

_NAN_IN_DATA = Cause(
    id="nan-in-sample",
    title="a sample holds NaN/Inf: a corrupt image, a division by zero in normalisation, a label "
    "that held NaN (after .long() it reads -9223372036854775808)",
    why="One NaN in an input or a target makes the loss NaN for its batch, at the step that "
    "draws it: from the first step, or suddenly after steady training.",
    confirm=f"{GUARD.rstrip(')')}, check_inputs=True) names the sample and its file (LG509 for "
    "an input, LG204 for a NaN label)",
    codes=("LG509", "LG204"),
    fix="Fix or drop the samples the guard names (on_error='skip' trains on without them and "
    "lists them); guard the normalisation against a zero standard deviation.",
    supported_by=(LOSS_NAN_FROM_START, BAD_INPUT_REPORTED, CAST_NAN, LOSS_STABLE),
)

# A NaN label cannot put a prediction outside [0, 1]: for a fault in the model's output, only
# the input half of _NAN_IN_DATA is a cause.
_NAN_IN_INPUT = Cause(
    id="nan-in-input",
    title="a sample holds NaN/Inf in its input: a corrupt image, a division by zero in normalisation",
    why="One NaN in an input passes through every layer to the model's output for its batch, "
    "at the step that draws it: from the first step, or suddenly after steady training.",
    confirm=f"{GUARD.rstrip(')')}, check_inputs=True) names the sample and its file (LG509)",
    codes=("LG509",),
    fix="Fix or drop the samples the guard names (on_error='skip' trains on without them and "
    "lists them); guard the normalisation against a zero standard deviation.",
    supported_by=(LOSS_NAN_FROM_START, BAD_INPUT_REPORTED, LOSS_STABLE),
)

_NAN_IN_LOSS = Cause(
    id="nan-in-loss-computation",
    title="the loss computes log(0) or divides by zero (a hand-written loss without an epsilon, "
    "probabilities of exactly 0 or 1 in fp16)",
    why="A finite model output can still give an infinite loss: log of a probability that "
    "rounded to 0, a Dice loss over an empty mask without a smoothing term.",
    confirm="labelguard.torch.trace_nonfinite replays a non-finite loss and tells log(0) from an "
    "overflow and from exploded outputs (LG502)",
    codes=("LG502",),
    fix="Add an epsilon or clamp before log and division; compute BCE from logits "
    "(BCEWithLogitsLoss).",
    supported_by=(UNSAFE_OP_REPORTED,),
)

_DEGENERATE_BOXES_TITLE = ("degenerate or flipped boxes in the annotations (xmin >= xmax or ymin >= "
                          "ymax): zero-size boxes, corners swapped, or width/height read as x2/y2")
_DEGENERATE_BOXES_CONFIRM = ("labelguard audit DATA names each degenerate box with its file and object "
                             "(LG301)")
_DEGENERATE_BOXES_FIX = ("Fix or drop the boxes the audit names: convert [x, y, w, h] to [x1, y1, x2, y2] "
                         "where the format needs it, and drop boxes whose width or height is 0 after "
                         "clipping and resizing.")

_DEGENERATE_BOXES_NAN = Cause(
    id="degenerate-boxes",
    title=_DEGENERATE_BOXES_TITLE,
    why="A detector encodes each box's width and height as a logarithm against its anchor or "
    "proposal: a box of width or height 0 gives log(0) = -Inf, and a flipped one the log of a "
    "negative number, NaN. The loss turns NaN at the first step that draws that image, however "
    "steady it was before.",
    confirm=_DEGENERATE_BOXES_CONFIRM,
    codes=("LG301",),
    fix=_DEGENERATE_BOXES_FIX,
    supported_by=(DETECTION_LOSSES,),
    needs_evidence=True,
)

_FREEZE = Cause(
    id="freeze-does-nothing",
    title="a freeze that does nothing (LG507) or frozen parameters handed to the optimizer "
    "(LG504), as labelguard reported in this log",
    why="A freeze that does nothing (requires_grad = False set on the module, as RCAN's "
    "MeanShift does) leaves layers training that the model relies on staying fixed. Frozen "
    "parameters in the optimizer get no gradient and do not move by themselves, so they alone "
    "make no NaN: look at the learning rate too.",
    confirm="labelguard.torch.audit_optimizer(model, optimizer) lists them (LG504, LG507)",
    codes=("LG507", "LG504"),
    fix="Freeze with module.requires_grad_(False) (it reaches the parameters) and build the "
    "optimizer over the trainable parameters only.",
    supported_by=(FROZEN_AT_FAILURE,),
    noted_by=(FROZEN_REPORTED,),
    needs_evidence=True,
)

_INDEX_FROM_LABELS = Cause(
    id="label-indexes-small-table",
    title="a class id or sample id is used as an index into a table that is too small",
    why="Per-class tables (class weights, colour palettes, one-hot matrices, confusion "
    "matrices, class embeddings) have one row per class. A label at or above that size indexes "
    "past the table.",
    confirm=AUDIT_SPLITS,
    codes=("LG102", "LG201", "LG506"),
    fix="Size the table from the data's label range (or num_classes including background), "
    "or fix the labels that exceed it.",
)

_INDEX_FROM_MODEL = Cause(
    id="index-computed-in-model",
    title="an index computed inside the model or loss (argmax, matching, sampling) is out of "
    "range",
    why="Indices built at run time (anchor/box assignment, top-k, gathered positions) are "
    "invisible to a data audit; an empty tensor, a NaN turned into an index or an off-by-one "
    "in that code produces the same assertion.",
    confirm=f"{RECORD} --loss module:function re-runs the crashing batch on the CPU, which "
    "raises with the index and the size",
    codes=("LG506", "LG502"),
    fix="Check the index tensor's min/max against the indexed size right before the call "
    "(on the CPU run), and guard empty inputs.",
)

# A NaN in generate()'s sampling where the log shows inference (transformers' generation, no
# training frame, no training printed): nothing of this run trained, so nothing diverged in it.
# Each is offered when the log shows inference (or evidence of its own points at it); inference
# alone tells none of them from the others, so it makes none likely.
_GENERATION_CAUSES = (
    Cause(
        id="half-precision-overflow",
        title="the model runs in float16 and its activations or logits overflow (beyond 65504) to inf, "
        "which softmax turns into NaN",
        why="float16 holds values up to 65504. Models trained in bfloat16 or float32 (Llama, BLOOM and T5 "
        "variants among them) produce larger activations; in float16 they become inf, softmax of a row "
        "holding inf is NaN, and multinomial rejects it. The same prompt often runs in float32.",
        confirm="run the same prompt with torch_dtype=torch.bfloat16 or torch.float32: the error goes if it "
        "is the precision; labelguard.torch.trace_nonfinite(model) on one forward of the prompt names the "
        "first module whose output overflowed (LG502)",
        codes=("LG502",),
        fix="Load the model in bfloat16 (GPUs from Ampere on) or float32; keep float16 for models trained "
        "in it.",
        supported_by=(HALF_PRECISION,),
        noted_by=(INFERENCE,),
        needs_evidence=True,
    ),
    Cause(
        id="nonfinite-weights-loaded",
        title="the weights hold NaN/Inf as loaded: a checkpoint saved after its training had diverged, or "
        "broken by a conversion or quantisation",
        why="A NaN weight makes the logits NaN at the first forward, whatever the prompt; a checkpoint "
        "written by a run whose loss had become NaN carries them, and so does a conversion that overflowed.",
        confirm="check all(torch.isfinite(p).all() for p in model.parameters()) right after loading; "
        "labelguard.torch.trace_nonfinite(model) names the first module that produced a NaN and its "
        "non-finite parameters (LG502)",
        codes=("LG502",),
        fix="Load a checkpoint from before the training loss became NaN, or redo the conversion; read the "
        "training log of the checkpoint for a NaN loss.",
        supported_by=(NONFINITE_WEIGHTS,),
        contradicted_by=(TRAINED,),
        noted_by=(INFERENCE,),
        needs_evidence=True,
    ),
    Cause(
        id="checkpoint-mismatch",
        title="the checkpoint does not fit the model: weights it did not hold were newly initialised, or the "
        "file is truncated or belongs to another architecture or adapter",
        why="transformers initialises every weight a checkpoint lacks. A head or adapter left random, or "
        "weights read from a partial file, give logits far outside their trained range, which overflow in "
        "half precision and make the sampling probabilities NaN.",
        confirm="read the loading messages ('Some weights of ... were not initialized from the model "
        "checkpoint', missing or unexpected keys); no labelguard data check covers checkpoints",
        codes=(),
        fix="Load the checkpoint with the model class and config it was saved from (merge LoRA/PEFT adapters "
        "as their library says), and download again a file whose size or hash differs.",
        supported_by=(WEIGHTS_NOT_LOADED,),
        noted_by=(INFERENCE,),
        needs_evidence=True,
    ),
    Cause(
        id="sampling-settings",
        title="the sampling settings leave no valid token: a temperature of (about) zero divides the logits "
        "into inf, or top_p, top_k or a logits processor masks every token",
        why="Sampling divides the logits by the temperature: at 0 or 1e-4 they overflow (in float16 first). "
        "A filter that removes every candidate leaves a row of -inf, which softmax turns into NaN.",
        confirm="rerun with do_sample=False (greedy) or temperature=1.0 and top_p=1.0: the error goes if it "
        "is the settings; no labelguard data check covers generation settings",
        codes=(),
        fix="Decode greedily (do_sample=False) instead of sampling at temperature 0, keep the temperature at "
        "0.1 or more and top_p above 0, and make custom logits processors leave at least one token.",
        supported_by=(SAMPLING_SETTINGS,),
        noted_by=(INFERENCE,),
        needs_evidence=True,
    ),
)

# labelguard's own finding: an error labelguard.torch raised names the check that failed, where and
# the values, so that check is the first cause. LG502 (where a NaN appeared), LG508 (a growth) and
# LG504/LG507 (the setup) name no cause by themselves: what their messages say ranks the causes.
_LABELGUARD_CHECK = Cause(
    id="labelguard",
    title="{code} {name}: {summary} (labelguard.torch checked it and raised)",
    why="labelguard.torch stopped the run with {code} where its check failed, before any kernel met the "
    "value. {why}",
    confirm="already checked by labelguard.torch: the line shown names where (the sample and its file, the "
    "step or the module) and the values; `labelguard rule {code}` explains the check",
    codes=(),
    fix="{fix}",
    supported_by=(LABELGUARD_ERROR,),
    reports=r"LG(?!50[2478])\d{3}",
)

# labelguard.torch.guard's note on an error the dataset raised (a missing file, a failed decode): no
# labelguard check failed; the guard named the sample, its file and the check such a failure is.
_LABELGUARD_NOTE = Cause(
    id="labelguard-note",
    title="{code} {name}: {summary} (the dataset raised the error; labelguard.torch.guard named the sample "
    "and its file)",
    why="The dataset's own code raised the error, not a labelguard check: labelguard.torch.guard caught it on "
    "its way out and added a note naming the sample, its file and the check such a failure is ({code}). {why}",
    confirm="the note shown names the sample and its file; `labelguard rule {code}` explains the check; "
    "guard(dataset, on_error='skip', quarantine=PATH) trains on and lists every such sample",
    codes=(),
    fix="{fix}",
    supported_by=(LABELGUARD_NOTE,),
    reports=r"LG(?!50[2478])\d{3}",
)

_POSITIONS_SHORTER = Cause(
    id="sequence-longer-than-positions",
    title="a sequence longer than the model's positions (max_position_embeddings): the embeddings add a "
    "position table, or expand a token-type buffer, of fewer positions than the input has tokens",
    why="transformers' embeddings take position_ids (and, without token_type_ids, the token types) from "
    "buffers of max_position_embeddings entries. An input of 600 tokens gets the first 512 of them, and "
    "adding (batch, 600, hidden) to (1, 512, hidden) fails on dimension 1: the first size is the input's "
    "length, the second the model's positions.",
    confirm=f"{GUARD_TOKENS} stops at the first tokenized sample longer than the model's positions, with "
    f"its index (LG602); {AUDIT_TOKENS} counts every such row (LG602)",
    codes=("LG602",),
    fix="Tokenize with truncation=True and max_length at most max_position_embeddings (2 fewer for "
    "RoBERTa-style models), or split long texts into overlapping windows; models with more positions "
    "(Longformer, BigBird) take longer inputs.",
    # Tied to the failure only at the sequence axis, raised in the embeddings; sizes a tokenizer
    # warned about, raised elsewhere (a user's layer sized for 512 tokens), are shown, not ranked.
    supported_by=(POSITION_SEQUENCE_MISMATCH,),
    noted_by=(MISMATCH_SIZES_OF_LONG_SEQUENCE,),
)


# --- the entries -----------------------------------------------------------------------

ENTRIES: tuple[Entry, ...] = (
    Entry(
        id="labelguard-finding",
        title="labelguard.torch reported what failed: its check code, where (the sample and its file, the "
        "step or the module) and the values",
        operation="labelguard.torch.guard (SampleError), trace_nonfinite (NonFiniteError), preflight "
        "(PreflightError) and watch (its LG508 and LG502 warnings)",
        # A check labelguard raised is a failed condition, as a kernel's assertion is: it outranks
        # the error it wraps (guard_collate's LG206 over default_collate's "stack expects ...").
        conditions=(
            r"\blabelguard(?:\.\w{1,30}){0,3}\.\w{0,40}Error[ \t]{0,3}:[ \t]{0,3}(?P<labelguard_code>LG\d{3})\b",
            r"\blabelguard\.torch\.guard:[ \t]{0,3}(?P<labelguard_code>LG\d{3})\b",
        ),
        messages=(
            r"\blabelguard\.torch\W{1,4}(?:(?:DEBUG|INFO|WARNING|ERROR)\W{1,4})?(?P<labelguard_code>LG50[28])\b",
            # Rich's logging handler: "[12/05/26 10:01:02] WARNING  LG508 ...", no logger name
            r"(?m)^(?:\[[^\]\n]{1,40}\])?[ \t]{0,40}(?:WARNING|ERROR)[ \t]{1,8}(?P<labelguard_code>LG50[28])\b",
        ),
        frames=(r"\braise_sample_error\b|\b_locate_(?:forward|backward)\b",),
        cpu_message="the same finding, raised the same way: labelguard.torch checks on the host, before "
        "any kernel runs",
        cannot_know=(
            "what else the run holds: labelguard.torch stops at the first check that fails "
            "(guard(..., on_error='skip', quarantine=PATH) trains on and lists every bad sample)",
        ),
        causes=(_LABELGUARD_CHECK, _LABELGUARD_NOTE, _FREEZE, *_GENERATION_CAUSES,
                when_seen(_DIVERGING, DIVERGENCE_REPORTED, NONFINITE_WEIGHTS),
                when_seen(_NAN_IN_INPUT, BAD_INPUT_REPORTED), when_seen(_NAN_IN_LOSS, UNSAFE_OP_REPORTED)),
    ),
    Entry(
        id="nll-target-out-of-range",
        title="a class target outside [0, n_classes) reached cross_entropy / nll_loss",
        operation="F.cross_entropy, nn.CrossEntropyLoss, F.nll_loss, nn.NLLLoss (1-D and "
        "spatial/segmentation targets)",
        conditions=(
            r"\bt\s*>=\s*0\s*&&\s*t\s*<\s*n_classes\b",
            r"\bcur_target\s*>=\s*0\s*&&\s*cur_target\s*<\s*n_classes\b",
            r"Assertion\s*[`']?\s*(?:t|cur_target)\s*<\s*n_classes\s*[`']",
        ),
        kernels=(
            r"\bnll_loss\w{0,64}(?:kernel|_2d|_1d)\w{0,64}",
            r"\bNLLLoss2d\.cu\b",
            r"\b(?:Spatial)?ClassNLLCriterion\b",
        ),
        messages=(
            r"Target (?P<target>-?\d+) is out of bounds",
        ),
        frames=(r"\b(?:cross_entropy|nll_loss|nll_loss2d|cross_entropy_loss)\b",),
        cpu_message="IndexError: Target 3 is out of bounds.",
        cannot_know=(
            "the offending target value and n_classes: the kernel assertion prints the "
            "condition, not the numbers (the CPU run prints the value)",
        ),
        told_by_values=((("target",), "n_classes: the error names the target, not the number of "
                         "classes the model outputs (print logits.shape[1])"),),
        causes=(
            _CLASS_ID_TOO_LARGE,
            _IGNORE_VALUE_NOT_IGNORED,
            _MASK_STORAGE,
            _HEAD_TOO_SMALL,
            _ONE_BASED,
            _SEQUENCE_LABELS_PAST_HEAD,
        ),
    ),
    Entry(
        id="bce-input-out-of-range",
        title="binary_cross_entropy got an input (prediction) outside [0, 1]",
        operation="F.binary_cross_entropy, nn.BCELoss",
        conditions=(
            r"\binput_val\s*>=\s*zero\s*&&\s*input_val\s*<=\s*one\b",
            r"\*?\b(?:input|x)\s*>=\s*0\.?\s*&&\s*\*?(?:input|x)\s*<=\s*1\.?",
        ),
        kernels=(r"\bBCECriterion\b", r"\bbce_updateOutput\w*", r"binary_cross_entropy\w{0,64}cuda"),
        messages=(
            r"all elements of input should be between 0 and 1",
            r"input value should be between 0~1, but got (?P<input>\S{1,64})",
        ),
        frames=(r"\bbinary_cross_entropy\b(?!_with_logits)",),
        cpu_message="RuntimeError: all elements of input should be between 0 and 1",
        cannot_know=(
            "whether the bad input was a logit (> 1 or < 0) or NaN: the assertion fails for "
            "both and prints neither",
        ),
        causes=(
            Cause(
                id="bce-fed-logits",
                title="BCELoss is fed logits: the last layer has no sigmoid",
                why="BCELoss takes probabilities and checks 0 <= p <= 1 on every element. Raw "
                "scores from a Linear/Conv head are routinely negative or above 1.",
                confirm=f"{PREFLIGHT} or {CHECKED} (LG501 names the loss and the input range "
                "it saw), or print pred.min() and pred.max() before the loss",
                codes=("LG501",),
                fix="Use nn.BCEWithLogitsLoss on the raw scores (it applies the sigmoid in a "
                "numerically stable way), or add torch.sigmoid before BCELoss.",
                weakened_by=(LOSS_NONFINITE, TRAINED),
            ),
            _DIVERGING,
            Cause(
                id="handmade-probability",
                title="a hand-made probability leaves [0, 1] (softmax of a subset, a product or "
                "sum of probabilities, label smoothing applied to the prediction)",
                why="Arithmetic on probabilities (adding two heads, rescaling, mixing) can push "
                "values slightly past 1 or below 0, which the check rejects.",
                confirm="print pred.min() and pred.max() on the CPU run of the failing batch",
                codes=("LG501",),
                fix="Clamp to [eps, 1 - eps] only when the excess is rounding; otherwise compute "
                "the loss from logits with BCEWithLogitsLoss.",
                weakened_by=(LOSS_NONFINITE,),
            ),
            _NAN_IN_INPUT,
            _FREEZE,
        ),
    ),
    Entry(
        id="bce-target-out-of-range",
        title="binary_cross_entropy got a target outside [0, 1]",
        operation="F.binary_cross_entropy, nn.BCELoss (torch releases that check the target)",
        conditions=(r"\btarget_val\s*>=\s*zero\s*&&\s*target_val\s*<=\s*one\b",),
        kernels=(r"binary_cross_entropy\w{0,64}cuda",),
        messages=(r"all elements of target should be between 0 and 1",),
        frames=(r"\bbinary_cross_entropy\b",),
        cpu_message="RuntimeError: all elements of target should be between 0 and 1",
        cannot_know=("the target value that failed: the assertion prints only the condition",),
        causes=(
            Cause(
                id="bce-mask-0-255",
                title="binary masks stored as 0/255 (or another scale) instead of 0/1",
                why="A mask read straight from an 8-bit image holds 255 for the foreground; "
                "BCE needs 1.",
                confirm=AUDIT,
                codes=("LG209",),
                fix="Divide by 255 or remap {255: 1} when loading the mask.",
            ),
            Cause(
                id="bce-class-index-mask",
                title="class-index masks (0, 1, 2, ...) given to a binary loss",
                why="A multi-class mask has values above 1; BCE only accepts one probability "
                "per element.",
                confirm=AUDIT,
                codes=("LG201", "LG505"),
                fix="Use cross_entropy with class indices, or one-hot the mask into one "
                "channel per class before BCE.",
            ),
            Cause(
                id="bce-soft-targets",
                title="soft targets above 1 from interpolation, edge maps or augmentation",
                why="Resizing or blurring a target, or building edge/gradient targets, yields "
                "values that are not limited to [0, 1].",
                confirm=AUDIT,
                codes=("LG204",),
                fix="Resize targets with nearest-neighbour interpolation and clamp or normalise "
                "continuous targets to [0, 1].",
            ),
        ),
    ),
    Entry(
        id="index-select-out-of-range",
        title="an index >= the size of the table in index_select / embedding lookup",
        operation="nn.Embedding, F.embedding, torch.index_select, embedding_bag, and tensor "
        "indexing that uses the vectorized gather path",
        conditions=(
            r"\bsrcIndex\s*<\s*srcSelectDimSize\b",
            r"\bind\s*>=\s*0\s*&&\s*ind\s*<\s*ind_dim_size\b",
            r"vectorized gather kernel index out of bounds",
            r"\binput\[emb\]\s*<\s*numRows\b",
        ),
        kernels=(
            r"\bindexSelect(?:Small|Large)Index\b",
            r"\bvectorized_gather_kernel\b",
            r"\bIndexKernelUtils\.cu\b",
            r"\bTHCTensorIndex\.cu\b",
            r"\bEmbeddingBag\.cu\b",
        ),
        messages=(
            r"index out of range in self",
            r"Index (?P<position>\d+) of input takes value (?P<index>-?\d+) which is not in "
            r"the valid range \[0, (?P<size>\d+)\)",
        ),
        frames=(r"\b(?:embedding|embedding_bag|index_select)\b",),
        cpu_message="IndexError: index out of range in self",
        cannot_know=(
            "the offending id and the table size: the assertion prints neither",
            "which embedding (tokens, positions, token types, classes) failed when the model "
            "has several",
        ),
        told_by_values=((("index", "size"), ""),),
        causes=(
            Cause(
                id="token-id-past-embedding",
                title="token ids >= the embedding's num_embeddings (tokenizer extended or "
                "swapped, embeddings not resized)",
                why="Adding special tokens or using another checkpoint's tokenizer produces ids "
                "past the last row of the embedding matrix.",
                confirm=f"{AUDIT_TOKENS} on the tokenized data (LG601 names the rows and ids past "
                f"the embedding, LG605 compares the tokenizer with it), or {PREFLIGHT_TOKENS} "
                "(LG601 from the model's own embedding, no GPU needed)",
                codes=("LG601", "LG605"),
                fix="model.resize_token_embeddings(len(tokenizer)) after changing the "
                "tokenizer, or use the tokenizer that matches the checkpoint.",
            ),
            Cause(
                id="position-or-type-id-past-table",
                title="sequences longer than max_position_embeddings, or token_type_ids / other "
                "ids beyond their table (type_vocab_size=1 given type id 1)",
                why="Position and segment embeddings are small tables; a long input or a "
                "second segment id indexes past them.",
                confirm=f"{AUDIT_TOKENS} (LG602 counts RoBERTa's padding offset: 514 positions "
                f"take 512 tokens; LG603 compares token_type_ids with type_vocab_size), or "
                f"{PREFLIGHT_TOKENS}",
                codes=("LG602", "LG603"),
                fix="Truncate inputs to max_length, or drop token_type_ids for models with "
                "type_vocab_size=1.",
                supported_by=(POSITION_FRAMES, SEQUENCE_TOO_LONG),
            ),
            Cause(
                id="ignore-value-as-id",
                title="label or ignore values (-100, -1, 255) fed in as ids, or class ids used "
                "to look up a class embedding that is too small",
                why="Negative ids wrap into huge unsigned offsets in the kernel; class ids "
                "above the class table size fail the same check.",
                confirm=f"{AUDIT_TOKENS} (a -100 in input_ids is an id outside the embedding: "
                f"LG601), or {AUDIT} for class ids",
                codes=("LG601", "LG102", "LG103", "LG506"),
                fix="Replace ignore values by the padding id before the lookup, and size class "
                "embeddings with num_classes.",
            ),
            _INDEX_FROM_MODEL,
        ),
    ),
    Entry(
        id="indexing-out-of-bounds",
        title="tensor[index] with an index outside the indexed dimension",
        operation="advanced indexing tensor[idx], tensor[idx] = v, index_put_",
        conditions=(
            r"\bindex\s*>=\s*-sizes\[i\]\s*&&\s*index\s*<\s*sizes\[i\]",
            r"-sizes\[i\]\s*<=\s*index\s*&&\s*index\s*<\s*sizes\[i\]",
        ),
        kernels=(r"\bIndexKernel\.cu\b",),
        messages=(
            r"IndexError: index (?P<index>-?\d+) is out of bounds for dimension (?P<dim>\d+) "
            r"with size (?P<size>\d+)",
        ),
        frames=(r"__getitem__|__setitem__|index_put",),
        cpu_message="IndexError: index 7 is out of bounds for dimension 0 with size 5",
        cannot_know=("the index value and the size it exceeded: the assertion prints neither",),
        told_by_values=((("index", "size"), ""),),
        causes=(
            _INDEX_FROM_LABELS,
            _INDEX_FROM_MODEL,
            Cause(
                id="negative-index",
                title="negative ids (-1 for 'unknown') used as indices",
                why="Python-style negative indices are allowed only down to -size; ids such as "
                "-100 or an ignore value stored as a large integer fall outside.",
                confirm=AUDIT,
                codes=("LG103",),
                fix="Filter out the ignore/unknown ids before indexing with them.",
            ),
        ),
    ),
    Entry(
        id="scatter-gather-out-of-bounds",
        title="an index outside the target dimension in scatter / gather (and one_hot on CUDA)",
        operation="torch.gather, scatter_, scatter_add_, F.one_hot (CUDA runs it as a scatter), "
        "label-smoothing and focal/Dice losses built on them",
        conditions=(
            r"\bidx_dim\s*>=\s*0\s*&&\s*idx_dim\s*<\s*index_size\b",
            r"\bindexValue\s*>=\s*0\s*&&\s*indexValue\s*<\s*\w+\.sizes\[dim\]",
        ),
        kernels=(
            r"\bScatterGatherKernel\.cu\b",
            r"\bTHCTensorScatterGather\b",
            r"\bTHCudaTensor_scatter\w{0,64}Kernel\b",
        ),
        messages=(
            r"Class values must be smaller than num_classes",
            r"Class values must be non-negative",
            r"RuntimeError: index (?P<index>-?\d+) is out of bounds for dimension (?P<dim>\d+) "
            r"with size (?P<size>\d+)",
        ),
        frames=(r"\b(?:one_hot|gather|scatter_?|scatter_add_?)\b",),
        cpu_message="RuntimeError: Class values must be smaller than num_classes. (one_hot) / "
        "RuntimeError: index 4 is out of bounds for dimension 1 with size 3 (gather, scatter)",
        cannot_know=(
            "whether one_hot, gather or scatter launched the kernel: they share it; the Python "
            "frame under CUDA_LAUNCH_BLOCKING=1 tells",
        ),
        causes=(
            Cause(
                id="one-hot-ignore-value",
                title="one_hot(mask, num_classes) on a mask holding the ignore value (255) or a "
                "value >= num_classes",
                why="Dice, focal and similar losses one-hot the target. On CUDA, one_hot skips "
                "its range check and relies on scatter's bounds assertion, so a 255 border or "
                "a stray class fails there.",
                confirm=f"{AUDIT_IGNORE} (LG201 lists the values outside the classes); "
                f"{GUARD} with loss='dice' flags ignore values headed for one_hot (LG501)",
                codes=("LG201", "LG102", "LG501"),
                fix="Mask out the ignore value before one_hot (e.g. set it to 0 and zero its "
                "loss weight), and pass num_classes including background.",
                prefer_when=(r"one_hot|Class values must", r"dice|Dice|focal|Focal"),
            ),
            Cause(
                id="gather-target-past-classes",
                title="gather/scatter over class scores with targets >= the number of classes "
                "(custom cross-entropy, focal loss, label smoothing, mixup)",
                why="Custom losses pick each target's score with logp.gather(1, target) or "
                "build soft labels with scatter_(1, target, value); the class axis has "
                "n_classes entries.",
                confirm=AUDIT_SPLITS,
                codes=("LG102", "LG201", "LG503"),
                fix="Make num_classes in the loss/mixup match the model head and the labels, "
                "and remove or remap out-of-range labels.",
            ),
            Cause(
                id="negative-label-in-gather",
                title="negative labels (-1 for 'unknown') in a gather/scatter index",
                why="gather and scatter accept no negative indices at all.",
                confirm=AUDIT,
                codes=("LG103",),
                fix="Drop or mask the -1 entries before the gather/scatter.",
            ),
            _INDEX_FROM_MODEL,
        ),
    ),
    Entry(
        id="index-add-out-of-bounds",
        title="an index outside the destination in index_add_ / index_copy_ / index_fill_",
        operation="Tensor.index_add_, index_copy_, index_fill_ (also embedding backward and "
        "per-class accumulations)",
        conditions=(
            r"\bdstIndex\s*<\s*dst(?:Add|Copy|Fill)DimSize\b",
            r"\bidx\s*>=\s*0\s*&&\s*idx\s*<\s*self_dim_size\b",
            r"index_copy_\(\): index out of bounds",
        ),
        kernels=(r"\bindex(?:Add|Copy|Fill)(?:Small|Large)Index\b",),
        messages=(
            r"index_(?:copy|add|fill)_\(\): index (?P<index>-?\d+) is out of bounds for "
            r"dimension (?P<dim>\d+) with size (?P<size>\d+)",
            r"RuntimeError: index (?P<index>-?\d+) is out of bounds for dimension (?P<dim>\d+) "
            r"with size (?P<size>\d+)",
        ),
        frames=(r"\bindex_(?:add|copy|fill)_?\b",),
        cpu_message="IndexError: index_copy_(): index 9 is out of bounds for dimension 0 with "
        "size 5 / index_add_ prints the gather message: RuntimeError: index 9 is out of bounds "
        "for dimension 0 with size 5",
        cannot_know=("the index value and the destination size: the assertion prints neither",),
        told_by_values=((("index", "size"), ""),),
        causes=(
            Cause(
                id="per-class-accumulation",
                title="per-class accumulation (confusion matrix, class centroids, counts) with a "
                "label >= the number of rows",
                why="Accumulating into a num_classes-row tensor with index_add_ fails for any "
                "label at or above num_classes.",
                confirm=AUDIT_SPLITS,
                codes=("LG102", "LG201"),
                fix="Allocate the accumulator from the true label range, or drop labels that "
                "exceed it (and ignore values) first.",
            ),
            Cause(
                id="foreign-ids",
                title="node/segment/item ids beyond the destination (graphs, sparse features, "
                "recommendation tables)",
                why="Ids built from another vocabulary or a later data snapshot exceed the table "
                "the model was sized with.",
                confirm=f"compare index.max() with the destination size on the CPU run ({RECORD} "
                "--loss module:function); no labelguard data check covers foreign ids",
                codes=("LG506",),
                fix="Rebuild the id map from the same data the table is sized from, or grow the "
                "table.",
            ),
            _INDEX_FROM_MODEL,
        ),
    ),
    Entry(
        id="multinomial-invalid-probabilities",
        title="torch.multinomial got probabilities with NaN/Inf, negative entries or an "
        "all-zero row",
        operation="torch.multinomial, torch.distributions.Categorical.sample, "
        "WeightedRandomSampler, sampling in generate()",
        conditions=(
            r"\bcumdist\[size\s*-\s*1\]\s*>\s*static_cast<\w+>\(0\)",
            r"Assertion\s*[`']\s*val\s*>=\s*zero\s*[`']",
            r"THCNumerics<\w+>::ge\(val,\s*zero\)",
            r"THCNumerics<\w+>::gt\(sum,\s*\w+\)",
        ),
        kernels=(
            r"\bMultinomialKernel\.cu\b",
            r"\bsampleMultinomialOnce\b",
            r"\bbinarySearchForMultinomial\b",
        ),
        messages=(
            r"probability tensor contains either `?inf`?, `?nan`? or element < 0",
            r"invalid multinomial distribution \((?P<reason>[^)\n]{0,200})\)",
        ),
        frames=(r"\bmultinomial\b",),
        cpu_message="RuntimeError: probability tensor contains either `inf`, `nan` or element < 0",
        cannot_know=("which row of the probability tensor was invalid",),
        causes=(
            *_GENERATION_CAUSES,
            _DIVERGING,
            Cause(
                id="logits-as-probabilities",
                title="logits or log-probabilities passed where probabilities are expected",
                why="multinomial needs non-negative weights; raw scores and log-probabilities "
                "are negative.",
                confirm="print probs.min() and torch.isfinite(probs).all() on the CPU run; no "
                "labelguard data check covers it",
                codes=(),
                fix="Apply softmax (or exp of log-probabilities) before sampling, or use "
                "torch.distributions.Categorical(logits=...).",
            ),
            Cause(
                id="all-zero-weights",
                title="a row of weights is all zero (a class that never occurs weighted by its "
                "frequency, all candidates masked out, temperature 0)",
                why="Sampling needs a positive total per row; weights computed from class counts "
                "are zero for classes absent from the data.",
                confirm=f"{AUDIT} (LG104 lists the classes that never occur)",
                codes=("LG104",),
                fix="Give absent classes a floor weight or drop them from the sampler; keep at "
                "least one candidate unmasked.",
                prefer_when=(r"sum of probabilities <= 0",),
            ),
        ),
    ),
    Entry(
        id="bernoulli-probability-out-of-range",
        title="torch.bernoulli got a probability outside [0, 1] (or NaN)",
        operation="torch.bernoulli, Tensor.bernoulli_, distributions.Bernoulli.sample, "
        "dropout-like masks built from predicted probabilities",
        conditions=(r"\b0\s*<=\s*p[1-4]?\s*&&\s*p[1-4]?\s*<=\s*1\b",),
        kernels=(
            r"\bbernoulli_tensor_cuda_kernel\b",
            r"\bDistributionBernoulli\.cu\b",
            r"\bDistributionTemplates\.h\b",
        ),
        messages=(
            r"Expected p_in >= 0 && p_in <= 1 to be true",
            r"bernoulli_? expects p to be in \[0, 1\], but got p=(?P<p>\S{1,64})",
            r"invalid argument \d+: must be >= 0 and <= 1",
        ),
        frames=(r"\bbernoulli_?\b",),
        cpu_message="RuntimeError: Expected p_in >= 0 && p_in <= 1 to be true, but got false.",
        cannot_know=("the probability that failed and its position",),
        told_by_values=((("p",), "the position of the probability that failed"),),
        causes=(
            Cause(
                id="bernoulli-fed-logits",
                title="the probabilities come from a layer without sigmoid (logits)",
                why="bernoulli takes a probability per element; unsquashed scores leave [0, 1].",
                confirm="print p.min() and p.max() on the CPU run; no labelguard data check "
                "covers it",
                codes=(),
                fix="Apply torch.sigmoid, or sample with "
                "torch.distributions.Bernoulli(logits=...).",
                weakened_by=(LOSS_NONFINITE, TRAINED),
            ),
            _DIVERGING,
        ),
    ),
    Entry(
        id="multi-margin-target-out-of-range",
        title="multi_margin_loss got a target outside [0, number of classes)",
        operation="F.multi_margin_loss, nn.MultiMarginLoss",
        conditions=(
            r"\btarget_k\s*>=\s*0\s*&&\s*target_k\s*<\s*dim\b",
            r"\"target index is out of bounds\"",
        ),
        kernels=(r"\bMultiMarginLoss\w*", r"\bMultiMarginCriterion\w*"),
        messages=(r"\btarget out of range\b",),
        frames=(r"\bmulti_margin_loss\b",),
        cpu_message="RuntimeError: target out of range",
        cannot_know=("the target value and the number of classes",),
        causes=(_CLASS_ID_TOO_LARGE, _HEAD_TOO_SMALL, _ONE_BASED),
    ),
    Entry(
        id="ctc-target-out-of-range",
        title="ctc_loss read past its inputs: a target label >= the number of output classes, or "
        "lengths that do not fit",
        operation="F.ctc_loss, nn.CTCLoss (the CUDA kernel has no bounds assertion: a bad label "
        "is an illegal memory access, or a wrong loss)",
        requires=(r"(?i)ctc_?loss|LossCTC|warp_?ctc",),
        conditions=(
            r"ctc_loss: target label out of range",
            r"\blabel\s*>=\s*0\s*&&\s*label\s*<\s*num_labels\b",
        ),
        kernels=(r"\bLossCTC\.cu\b", r"\bctc_loss_\w{0,64}gpu_kernel\b"),
        messages=(
            r"an illegal memory access was encountered",
            r"Expected input_lengths to have value at most (?P<max_input_length>\d+), but got "
            r"value (?P<input_length>\d+)",
            r"Expected tensor to have size at least (?P<needed>\d+) at dimension 1, but got "
            r"size (?P<got>\d+) for argument #2 'targets'",
        ),
        frames=(r"\bctc_loss\b",),
        cpu_message="none for an out-of-range label: the CPU kernel does not check it either "
        "(the loss value is wrong); length errors read 'Expected input_lengths to have value "
        "at most T'",
        cannot_know=(
            "which label or length was wrong: an illegal memory access carries no details",
        ),
        causes=(
            Cause(
                id="ctc-label-past-classes",
                title="a target label >= the number of classes of log_probs (alphabet larger "
                "than the output layer, blank not counted)",
                why="The kernel uses each label to index the class axis of log_probs without a "
                "bounds check, so a label past the last class reads outside the tensor.",
                confirm=f"compare targets.max() with log_probs.shape[2] - 1 on the failing batch "
                f"({RECORD}); {GUARD} with num_classes=C checks label ids the dataset "
                "returns as its target (LG102)",
                codes=("LG102", "LG503"),
                fix="Size the output layer as len(alphabet) + 1 (the blank), map characters to "
                "1..len(alphabet) when blank=0, and drop characters outside the alphabet.",
            ),
            Cause(
                id="ctc-lengths",
                title="padded targets passed without trimming, or target_lengths/input_lengths "
                "that do not match the tensors",
                why="With padded 2-D targets the padding value is read as a label when "
                "target_lengths is too long; input_lengths above T read past log_probs.",
                confirm="assert (target_lengths <= targets.shape[1]).all() and "
                "(input_lengths <= log_probs.shape[0]).all() on the failing batch (LG505)",
                codes=("LG505",),
                fix="Compute target_lengths from the unpadded transcripts and input_lengths "
                "from the model's output length after downsampling.",
                prefer_when=(r"Expected input_lengths to have value at most",
                             r"Expected tensor to have size at least \d+ at dimension 1"),
            ),
            Cause(
                id="ctc-negative-label",
                title="negative labels or the padding value (-1, -100) inside the targets",
                why="A negative label indexes before the start of log_probs.",
                confirm=AUDIT,
                codes=("LG103",),
                fix="Pad with a valid id that target_lengths excludes, never with -1.",
            ),
        ),
    ),
    Entry(
        id="stack-unequal-size",
        title="default_collate could not stack the samples of a batch: their shapes differ",
        operation="DataLoader's default_collate (torch.stack) with batch_size > 1",
        messages=(
            r"stack expects each tensor to be equal size, but got (?P<first_shape>\[[^\]\n]{0,200}\]) "
            r"at entry (?P<first_entry>\d+) and (?P<other_shape>\[[^\]\n]{0,200}\]) at entry "
            r"(?P<other_entry>\d+)",
            r"Trying to resize storage that is not resizable",
        ),
        frames=(r"\bdefault_collate\b|\bcollate\b",),
        cpu_message="RuntimeError: stack expects each tensor to be equal size, but got "
        "[224, 224] at entry 0 and [448, 448] at entry 1",
        cannot_know=(
            "which files the two entries came from: the numbers are positions in the batch, "
            "not dataset indices (labelguard.torch.guard_collate or a flight record names them)",
            "whether the images or the masks/labels have the odd shape: the message names "
            "only the stacked tensor's shapes",
        ),
        causes=(
            Cause(
                id="image-mask-size-differs",
                title="an image and its mask/label have different sizes, or one side is not "
                "resized by the transforms",
                why="Transforms applied to the image only (or with different sizes) leave the "
                "mask at its original size; the first sample with an odd size breaks the "
                "stack.",
                confirm=f"{AUDIT} (LG206 lists every image/mask pair whose size differs, with both sizes; "
                f"LG213 each sample whose shape differs from the rest of its split); at run time "
                f"{GUARD} checks each pair as it is loaded (LG206), and {GUARD_COLLATE}",
                codes=("LG206", "LG213"),
                fix="Apply the same geometric transform to image and mask (paired transforms), "
                "and resize masks with nearest-neighbour interpolation.",
                supported_by=(STACK_MAP_SIZES,),
            ),
            Cause(
                id="images-vary-in-size",
                title="images of varying size with no resize/crop to a common size",
                why="Datasets collected from several sources have several resolutions; "
                "default_collate needs equal shapes inside a batch.",
                confirm=f"{AUDIT} (LG213 names each sample whose shape differs from the rest of its split, "
                f"and the shape most of them have); at run time {GUARD_COLLATE}",
                codes=("LG213", "LG206"),
                fix="Resize or crop to a fixed size in the transforms, or use a collate_fn that "
                "pads (detection) or batch_size=1.",
                supported_by=(STACK_IMAGE_SIZES,),
            ),
            Cause(
                id="channels-vary",
                title="some samples have another number of channels: grayscale (1) or RGBA (4) images "
                "among RGB ones, or masks saved with colour channels among single-channel ones",
                why="PIL opens a grayscale file as mode L and a PNG with transparency as RGBA; ToTensor "
                "keeps their channel counts, so one such file in a batch of RGB images breaks the stack.",
                confirm=f"{AUDIT} (LG213 names the samples whose shape differs from the rest of their split; "
                f"LG207 masks with several channels); at run time {GUARD_COLLATE}",
                codes=("LG213", "LG207"),
                fix="Convert every image on loading (Image.open(path).convert('RGB')), and masks to single-"
                "channel class-index maps.",
                supported_by=(STACK_CHANNELS,),
            ),
            Cause(
                id="mask-layout-varies",
                title="masks with an unexpected layout (RGB vs single channel, one-hot, an "
                "extra axis) in some files",
                why="A colour export or a channel axis in a few masks gives them a different "
                "rank or channel count from the rest.",
                confirm=f"{AUDIT} (LG207 masks with several channels or a wider dtype, LG203 colour masks, "
                f"LG213 samples whose shape differs from the rest); at run time {GUARD_COLLATE}",
                codes=("LG207", "LG203", "LG213"),
                fix="Convert every mask to a single-channel class-index map before training.",
                supported_by=(STACK_RANKS,),
            ),
            Cause(
                id="sequences-not-padded",
                title="samples of varying length along their last axis (token sequences, audio, feature "
                "frames, time series) batched without padding to one length",
                why="default_collate stacks each field with torch.stack, which needs equal shapes: sequences "
                "of 128 and 97 tokens, clips of 16000 and 14720 samples or feature maps of 3001 and 2113 "
                "frames cannot be stacked unless the data is padded or cut to one length, or the collate "
                "function pads the batch.",
                confirm=f"{GUARD_COLLATE}; print the last dimension of a few samples",
                codes=("LG206",),
                fix="Pad per batch in a collate_fn (torch.nn.utils.rnn.pad_sequence, with the lengths kept for "
                "masking; DataCollatorWithPadding(tokenizer) for tokenized text), or pad or crop every sample to "
                "one length in the dataset (padding='max_length' with truncation for a tokenizer).",
                supported_by=(STACK_LENGTHS,),
                needs_evidence=True,
            ),
        ),
    ),
    Entry(
        id="tensor-size-mismatch",
        title="two tensors' sizes differ in a dimension where an operation needs them equal",
        operation="element-wise arithmetic and broadcasting (a + b), Tensor.expand, and losses that compare "
        "output and target element by element",
        messages=(
            r"The size of tensor a \((?P<size_a>\d+)\) must match the size of tensor b \((?P<size_b>\d+)\) "
            r"at non-singleton dimension (?P<dimension>\d+)",
            r"The expanded size of the tensor \((?P<expanded_size>\d+)\) must match the existing size "
            r"\((?P<existing_size>\d+)\) at non-singleton dimension (?P<dimension>\d+)",
        ),
        cpu_message="the same RuntimeError: sizes are checked before any kernel runs",
        cannot_know=(
            "which tensors 'a' and 'b' are: the message gives their sizes, the traceback's last frame "
            "the operation",
        ),
        causes=(
            Cause(
                id="shapes-differ-in-op",
                title="two tensors of different sizes meet in an element-wise operation: data sized for "
                "another model (image size, sequence length, channels), or a layer built for another size",
                why="Element-wise operations broadcast only dimensions of size 1; the message names the "
                "dimension where the two operands of the last frame's operation differ, and both sizes.",
                confirm="print the shapes of both operands at the frame the traceback ends in; no labelguard "
                "data check covers a model's internal sizes",
                codes=(),
                fix="Make the input match what the model was built for (resize, crop or truncate it), or "
                "build the layer for the input's size.",
            ),
            Cause(
                id="target-shape-differs",
                title="a target shaped unlike the model output reaches a loss that compares them element by "
                "element (MSE, L1, BCE): (N,) against (N, 1), or a mask without its channel axis",
                why="Regression and binary losses compare output and target element by element; a target "
                "of another shape is broadcast (torch warns 'Using a target size that is different to the "
                "input size') or, when it cannot be, fails with this error.",
                confirm=f"{PREFLIGHT} runs one batch through the model and the loss on the CPU and names a "
                "target whose shape or dtype does not fit the loss (LG505)",
                codes=("LG505",),
                fix="Give the target the output's shape (target.view_as(output); unsqueeze(1) for (N,) "
                "targets), or squeeze the output's singleton axis.",
                prefer_when=(r"Using a target size \(torch\.Size",
                             r"\b(?:mse_loss|l1_loss|smooth_l1_loss|huber_loss|binary_cross_entropy\w*)\b"),
            ),
            _POSITIONS_SHORTER,
        ),
    ),
    Entry(
        id="loss-nonfinite",
        title="the loss became NaN/Inf during training",
        operation="the loss and every operation of the step before it",
        messages=NONFINITE_LOSS_MESSAGES,
        cpu_message="the same NaN: a NaN is no device fault, the CPU computes it too",
        cannot_know=(
            "which module produced the first NaN, and whether it came from the weights or from "
            "a sample: the log prints the loss only (labelguard.torch.trace_nonfinite names the "
            "module; guard(..., check_inputs=True) the sample)",
        ),
        causes=(_DIVERGING, _DEGENERATE_BOXES_NAN, _NAN_IN_DATA, _NAN_IN_LOSS, _FREEZE),
    ),
    Entry(
        id="detection-degenerate-box",
        title="a detection target holds a box with no positive width or height",
        operation="torchvision.models.detection (Faster/Mask R-CNN, RetinaNet, FCOS, SSD): the "
        "check of the targets in the model's forward, after its transform resized them",
        messages=(
            r"All bounding boxes should have positive height and\s+width\.\s+Found invalid box "
            r"(?P<box>\[[^\]\n]{1,120}\]) for target at index (?P<target_index>\d+)",
            r"All bounding boxes should have positive height and\s+width",
        ),
        frames=(r"\bGeneralizedRCNN\b|generalized_rcnn",),
        cpu_message="the same AssertionError: the check runs on the targets before any kernel",
        cannot_know=(
            "which file the box came from: 'target at index' counts the images of the batch, "
            "not the dataset",
            "the box as annotated: the message prints it after the model's transform resized the "
            "image, so its coordinates are scaled (a zero width or height stays zero)",
        ),
        causes=(
            Cause(
                id="degenerate-boxes",
                title=_DEGENERATE_BOXES_TITLE,
                why="torchvision checks every target box once its transform has resized it with the "
                "image, before the backbone runs: x2 must be above x1 and y2 above y1. A box read "
                "as [x, y, w, h] where [x1, y1, x2, y2] is expected, a point annotation, or a box "
                "that a crop or resize shrank to a line fails it.",
                confirm=_DEGENERATE_BOXES_CONFIRM,
                codes=("LG301",),
                fix=_DEGENERATE_BOXES_FIX,
            ),
        ),
    ),
    Entry(
        id="data-file-not-loaded",
        title="a file the data pipeline names could not be found or loaded",
        operation="the dataset's __getitem__ (np.load, Image.open, cv2.imread, h5py.File) or a "
        "list of files read at start-up",
        messages=(
            r"No such file or directory:?[ \t]{0,3}(?P<missing_path>'[^'\n]{1,1000}'|\"[^\"\n]{1,1000}\")",
            r"(?i)\b(?:unable to|failed to|cannot|can't|could not) (?:load|open|read)\b[^:\n]{0,80}\.?"
            r"(?:npz|npy|h5|nii|png|jpe?g|tiff?|bmp|mat|pkl|pt|pth)\b[^:\n]{0,40}:",
        ),
        frames=(r"\b__getitem__\b",),
        cpu_message="the same error: a missing or unreadable file fails on every device",
        cannot_know=(
            "whether the file exists under another name: the message shows only the path that "
            "was tried (labelguard audit DATA --list LIST resolves every line)",
        ),
        causes=(
            Cause(
                id="list-path-whitespace",
                title="the path keeps whitespace from the file list it came from (a trailing "
                "space, a Windows line end)",
                why="A list read with readlines() or split('\\n') keeps a trailing space or a "
                "'\\r' in each name; the path built from it names no file.",
                confirm="labelguard audit DATA --list LIST (LG004 names each unclean line and "
                "still resolves it; LG003 each entry without a file)",
                codes=("LG004", "LG003"),
                fix="Strip each line when reading the list (line.strip()); `labelguard fix list "
                "LIST --apply` rewrites it, reversibly.",
                supported_by=(PATH_WHITESPACE,),
            ),
            Cause(
                id="file-not-there",
                title="the file is not where the path points: a wrong root or split folder, an "
                "extension the list leaves out, a name the list and the folder spell differently",
                why="Lists written on another machine or for another split name files relative "
                "to another root.",
                confirm="labelguard audit DATA --list LIST (LG003 lists every entry without a "
                "file); guard(dataset, on_error='skip', quarantine=PATH) trains on and lists "
                "them",
                codes=("LG003",),
                fix="Point the dataset at the root the list is relative to, or regenerate the "
                "list from the files (`labelguard fix list LIST --apply` drops missing entries).",
            ),
            Cause(
                id="file-unreadable",
                title="the file is there but cannot be read: truncated, or not the format its "
                "extension says",
                why="An interrupted download or copy leaves a file that the loader rejects.",
                confirm="labelguard audit DATA (LG001 names each unreadable file and why)",
                codes=("LG001",),
                fix="Re-copy or regenerate the files the audit names.",
                weakened_by=(PATH_WHITESPACE,),
            ),
        ),
    ),
    Entry(
        id="illegal-memory-access",
        title="CUDA illegal memory access: a kernel read or wrote outside its tensors",
        operation="any CUDA kernel without a bounds assertion (CTC, custom CUDA extensions, "
        "fused or compiled kernels)",
        messages=(
            r"an illegal memory access was encountered",
            r"\bcudaErrorIllegalAddress\b",
            r"\berror=77\b",
        ),
        cpu_message="depends on the operation: run the same batch there to get it",
        cannot_know=(
            "which kernel failed: the error is reported at a later synchronisation, and the "
            "Python frame is usually not the culprit unless CUDA_LAUNCH_BLOCKING=1 was set",
        ),
        causes=(
            Cause(
                id="unchecked-kernel-bad-index",
                title="an out-of-range label or index reached a kernel that does not check "
                "bounds (CTC loss, custom/compiled kernels, extensions)",
                why="Kernels without a device-side assertion do not stop at a bad index; they "
                "read or write past the tensor, which the GPU reports as an illegal address.",
                confirm=f"{AUDIT_SPLITS}; {RECORD} --loss module:function to get the CPU error",
                codes=("LG102", "LG201", "LG506"),
                fix="Fix the labels/indices the audit or the CPU run reports.",
            ),
            Cause(
                id="extension-mismatch",
                title="a custom CUDA extension built for another torch/CUDA version, or tensors "
                "on different devices handed to an extension",
                why="Extensions compiled against another ABI or given a tensor on the wrong "
                "device dereference invalid pointers.",
                confirm="run the same step on the CPU or without the extension; no labelguard "
                "data check covers it",
                codes=(),
                fix="Rebuild the extension for the installed torch and move every input to the "
                "same device.",
            ),
        ),
    ),
    Entry(
        id="cuda-error",
        title="a CUDA error other than an assertion or an illegal address was reported",
        operation="any CUDA call: the error is raised at the first call after the fault",
        messages=(
            r"CUDA error: (?!device-side assert|an illegal memory access)(?P<cuda_error>[^\n.]{1,300})",
        ),
        cpu_message="depends on the operation: run the same batch there to get it",
        cannot_know=(
            "which kernel failed and why: the error names only the CUDA status, reported at a "
            "later call than the fault",
        ),
        causes=(
            Cause(
                id="late-kernel-fault",
                title="a kernel fault reported late (an 'unspecified launch failure' often "
                "follows an out-of-range index in a kernel without an assertion)",
                why="CUDA reports a failed kernel at the next synchronising call, under whatever "
                "status the driver gives the failure.",
                confirm="rerun with CUDA_LAUNCH_BLOCKING=1 and run the batch on the CPU; no "
                "labelguard check names the kernel, but the CPU run names the value",
                codes=(),
                fix="Fix what the CUDA_LAUNCH_BLOCKING=1 traceback or the CPU error names.",
            ),
            Cause(
                id="gpu-driver-fault",
                title="the GPU, its driver or its memory failed (Xid errors, ECC, overheating, a "
                "driver older than the CUDA runtime)",
                why="Hardware and driver faults surface as CUDA errors in whatever call is "
                "running.",
                confirm="look for Xid lines in the kernel log (dmesg) and run nvidia-smi; no "
                "labelguard data check covers it",
                codes=(),
                fix="Update the driver to one that supports the CUDA runtime of your torch "
                "build, and check the GPU's health.",
            ),
            Cause(
                id="no-kernel-for-gpu",
                title="the torch build (or an extension) has no kernels for this GPU",
                why="A wheel built for other GPU architectures, or an extension compiled for "
                "another CUDA version, fails at its first kernel launch.",
                confirm="compare torch.cuda.get_arch_list() with the GPU's compute capability "
                "(torch.cuda.get_device_capability()); no labelguard data check covers it",
                codes=(),
                fix="Install the torch build for your GPU and CUDA version, and rebuild "
                "extensions against it.",
                prefer_when=(r"no kernel image|not compatible with the current PyTorch",),
            ),
        ),
        generic=True,
    ),
    Entry(
        id="device-side-assert",
        title="a CUDA kernel assertion failed (device-side assert), but the assertion line is "
        "not in the log",
        operation="any CUDA kernel with a bounds check: losses, embedding, indexing, gather, "
        "scatter, sampling",
        messages=(
            r"device-side assert(?:ion)? triggered",
            r"\bcudaErrorAssert\b",
            r"cuda runtime error \((?:59|710)\)",
            r"\berror=(?:59|710)\b",
        ),
        cpu_message="the same step raises a Python exception with the value, such as "
        "'IndexError: Target 3 is out of bounds.'",
        cannot_know=(
            "which kernel asserted: the 'Assertion ... failed' lines are printed by the GPU on "
            "stderr before the traceback (in a notebook, in the server's console); paste them "
            "too",
        ),
        causes=(
            _CLASS_ID_TOO_LARGE,
            Cause(
                id="bce-input-outside",
                title="BCELoss got an input outside [0, 1] (no sigmoid, or NaN from training)",
                why="BCELoss asserts 0 <= input <= 1 on the GPU; logits and NaN fail it.",
                confirm=CHECKED,
                codes=("LG501", "LG502"),
                fix="Use BCEWithLogitsLoss on logits; trace the first NaN when training had "
                "run for a while.",
            ),
            _IGNORE_VALUE_NOT_IGNORED,
            _MASK_STORAGE,
            Cause(
                id="ids-past-table",
                title="ids beyond an embedding or index table (tokenizer vs embedding size)",
                why="Embedding and index_select assert that every id is below the table size.",
                confirm=f"{AUDIT_TOKENS} for token ids (LG601, LG605), or {PREFLIGHT} for any "
                "other index table (LG506)",
                codes=("LG601", "LG605", "LG506"),
                fix="Resize the embedding to the tokenizer, or fix the ids.",
            ),
            _HEAD_TOO_SMALL,
        ),
        generic=True,
    ),
)


GENERIC_STEPS: tuple[str, ...] = (
    "Rerun with CUDA_LAUNCH_BLOCKING=1 (Linux/macOS: `CUDA_LAUNCH_BLOCKING=1 python train.py`; "
    "PowerShell: `$env:CUDA_LAUNCH_BLOCKING=1`; cmd: `set CUDA_LAUNCH_BLOCKING=1`): kernels then "
    "run synchronously and the traceback points at the call that failed.",
    "Run the failing step on the CPU (model and batch .cpu()): CPU kernels raise a Python "
    "exception with the offending value instead of a device-side assert.",
    "Audit the data before training, every split (training and validation): "
    f"`{AUDIT}`.",
    f"Check the setup on the CPU before training ({PREFLIGHT}), guard the dataset ({GUARD}) "
    "to stop at the first bad sample with its index and file, and record the batches in "
    "flight (labelguard.torch.record(loader, PATH)) so that `labelguard explain LOG --record "
    "PATH` and `labelguard replay PATH` name the samples after a crash.",
    "After a device-side assert the CUDA context is unusable: restart the process (or the "
    "notebook kernel) before trying again; errors raised after the first one are "
    "consequences, not causes.",
)


ERA_HINTS: tuple[tuple[str, str], ...] = (
    (r"\bAcceleratorError\b", "torch 2.8 or newer (the error is a torch.AcceleratorError)"),
    (r"TORCH_USE_CUDA_DSA", "torch 2.0 or newer (the message mentions TORCH_USE_CUDA_DSA)"),
    (r"\bTHCUNN\b|[\\/]THC[\\/]|\bTHCudaCheck\b",
     "an old torch 1.x: the kernel lives in THC/THCUNN, which later releases replaced"),
    (r"cuda runtime error \(\d+\)", "an old torch 1.x ('cuda runtime error (N)' messages)"),
)
