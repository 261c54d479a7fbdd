"""LG508: the definition of the code; the PyTorch runtime side (labelguard.torch) reports it."""

from labelguard.core.registry import define

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
