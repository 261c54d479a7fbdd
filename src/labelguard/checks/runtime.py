"""LG5xx: training-time problems found by the PyTorch runtime guard (labelguard.torch)."""

from labelguard.core.registry import define

LOSS_DOMAIN = define(
    "LG501", "loss-input-outside-domain", "error",
    summary="a loss input is outside the loss's domain (BCE input outside [0, 1])",
    why="""
BCELoss takes probabilities. Logits (no sigmoid) or NaN fail the
"input_val >= zero && input_val <= one" device-side assert on a GPU.""",
    bad="loss = nn.BCELoss()(model(x), y)  # the head has no sigmoid",
    good="loss = nn.BCEWithLogitsLoss()(model(x), y)",
    fix="Use BCEWithLogitsLoss on logits (numerically stable), or add a sigmoid before BCELoss.",
    scope="runtime",
)

NON_FINITE = define(
    "LG502", "non-finite-values", "error",
    summary="non-finite values (NaN/Inf) in a model output, loss input or gradient",
    why="""
A NaN passes through every layer and the loss; in BCE it becomes the domain assert, in
argmax/indexing an out-of-range index. The first module that produced it is the place to look.""",
    bad="optimizer = Adam(model.parameters(), lr=1e-2)  # activations grow for epochs, then overflow",
    good="""optimizer = Adam(model.parameters(), lr=1e-4)
torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # before optimizer.step()""",
    fix="Find the first module that produced the value (labelguard.torch.trace_nonfinite) and "
    "whether training diverged before it (labelguard.torch.watch, LG508): lower the learning "
    "rate, clip gradients; check the data for NaN (guard, LG509) and the loss for log(0).",
    scope="runtime",
)

HEAD_MISMATCH = define(
    "LG503", "head-size-mismatch", "error",
    summary="the model's number of output classes differs from the spec or the targets",
    why="""
A head with 2 outputs trained on labels {0, 1, 2} indexes past the logits: the cross-entropy
device-side assert.""",
    bad="SwinUnet(num_classes=2) trained on masks holding 0, 1 and 2",
    good="SwinUnet(num_classes=3)",
    fix="Make the head's out_features/out_channels equal to num_classes (background included).",
    scope="runtime",
)

FROZEN_IN_OPTIMIZER = define(
    "LG504", "frozen-parameters-optimised", "warning",
    summary="parameters with requires_grad=False are handed to the optimizer (or trainable ones are missing)",
    why="""
A parameter with requires_grad=False gets no gradient, and optimizers skip a parameter whose
.grad is None: it moves only when a gradient tensor is left on it (frozen after a step with
zero_grad(set_to_none=False), or a gradient set by hand), and then weight decay and momentum
move it. More often the finding says the setup is not what it seems: layers meant to be fixed
that something else unfreezes later, or trainable parameters that no param group holds.""",
    bad="optim.Adam(model.parameters())  # model has frozen MeanShift layers",
    good="optim.Adam(filter(lambda p: p.requires_grad, model.parameters()))",
    fix="Build the optimizer over the trainable parameters only.",
    scope="runtime",
)

TARGET_DTYPE = define(
    "LG505", "target-dtype-or-shape", "error",
    summary="a target's dtype or shape is wrong for its loss",
    why="""
cross_entropy treats float targets as class probabilities (shape must match the input), and
integer targets must be int64; a mask of shape (N, 1, H, W) fails against logits (N, C, H, W).""",
    bad="F.cross_entropy(logits, mask.float())",
    good="F.cross_entropy(logits, mask.long().squeeze(1))",
    fix="Convert class-index targets with .long() and give them the input's shape without the class axis.",
    scope="runtime",
)

INDEX_OUT_OF_TABLE = define(
    "LG506", "index-exceeds-table", "error",
    summary="an index tensor exceeds the table it indexes (token ids >= embedding rows)",
    why="""
An id >= num_embeddings is the "srcIndex < srcSelectDimSize" device-side assert on a GPU and
"index out of range in self" on the CPU.""",
    bad="tokenizer extended to 30524 tokens, model.embeddings has 30522 rows",
    good="model.resize_token_embeddings(len(tokenizer))",
    fix="Resize the embedding to the tokenizer (resize_token_embeddings), or fix the ids.",
    scope="runtime",
)

NOOP_FREEZE = define(
    "LG507", "freeze-that-does-nothing", "error",
    summary="requires_grad = False set as an attribute on a module (its parameters stay "
    "trainable), or requires_grad_ never reaching the parameters",
    why="""
nn.Module has no requires_grad switch: `self.requires_grad = False` only stores an attribute,
and requires_grad_(False) on a copy (copy.deepcopy, .data, a state_dict() tensor) changes the
copy. The parameters keep requires_grad=True, get gradients and are trained: a layer meant to
stay fixed (RCAN's MeanShift subtracting the RGB mean) drifts with the rest.""",
    bad="""class MeanShift(nn.Conv2d):
    def __init__(self):
        super().__init__(3, 3, kernel_size=1)
        self.requires_grad = False  # an attribute; weight and bias stay trainable""",
    good="""class MeanShift(nn.Conv2d):
    def __init__(self):
        super().__init__(3, 3, kernel_size=1)
        self.requires_grad_(False)  # nn.Module's method: freezes weight and bias""",
    fix="Freeze the parameters themselves: module.requires_grad_(False) (the method, with the "
    "underscore) or p.requires_grad = False for each p in module.parameters(), on the model "
    "you train, not on a copy.",
    scope="runtime",
)

DIVERGING = define(
    "LG508", "training-diverging", "warning",
    summary="loss, gradient norm or activations grow by orders of magnitude within a few steps, "
    "before any NaN; names the first module whose output exploded",
    why="""
A NaN rarely comes from nowhere: weights that a too large step pushed out grow activations
step after step until one overflows float32 (3.4e38) and the next operation makes NaN. By then
the module where it overflows only shows the end of it; the growth started earlier, upstream.""",
    bad="optim.Adam(model.parameters(), lr=1e-2, betas=(0.5, 0.999))  # no gradient clipping",
    good="""optim.Adam(model.parameters(), lr=1e-4)
torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # between backward() and step()""",
    fix="Lower the learning rate (10x), clip gradients (torch.nn.utils.clip_grad_norm_), use "
    "a warm-up; check the optimizer's betas/eps against the defaults.",
    scope="runtime",
)

INPUT_INVALID = define(
    "LG509", "input-non-finite-or-out-of-range", "error",
    summary="a sample's input (not its target) holds NaN/Inf or is outside the range the model "
    "was told to expect",
    why="""
One NaN pixel turns every activation it reaches into NaN, then the loss and every weight
after the next step: the run fails at a later batch with nothing pointing at the sample.
Values outside the range the model was trained on (0..255 fed where 0..1 is expected) give
no error at all, only a model that does not learn.""",
    bad="image = (image - image.mean()) / image.std()  # a constant slice: 0 / 0 = NaN",
    good="image = (image - image.mean()) / max(image.std(), 1e-8)",
    fix="Fix the sample (re-export the file) or the normalisation that divides by zero; "
    "declare the expected range with guard(..., input_range=(low, high)).",
    scope="runtime",
)
