"""LG502: the definition of the code; the PyTorch runtime side (labelguard.torch) reports it."""

from labelguard.core.registry import define

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
