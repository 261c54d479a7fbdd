"""LG504: the definition of the code, and the findings labelguard.torch reports with it from
what it found in the parameters an optimizer holds."""

from __future__ import annotations

from labelguard.core.findings import Finding
from labelguard.core.registry import define
from labelguard.core.text import noun, plural, verb

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
    fix_safety="display-only",
)


def frozen_parameters_optimised(parameters: list[str], listed: str) -> Finding:
    """LG504 for the frozen ``parameters`` (requires_grad=False) a param group holds; ``listed``
    shows the first few, each with the type of the module that holds it."""
    return FROZEN_IN_OPTIMIZER.finding(
        None,
        f"{plural(len(parameters), 'frozen parameter')} (requires_grad=False) "
        f"{verb(len(parameters), 'is')} in the optimizer: {listed}",
        hint="Build the optimizer over the trainable parameters only: "
        "Adam(p for p in model.parameters() if p.requires_grad).",
        parameters=parameters, kind="frozen-in-optimizer",
    )


def trainable_parameters_missing(parameters: list[str], listed: str) -> Finding:
    """LG504 for the trainable ``parameters`` of the model that no param group holds (``listed``
    as for :func:`frozen_parameters_optimised`)."""
    them = "it" if len(parameters) == 1 else "them"
    return FROZEN_IN_OPTIMIZER.finding(
        None,
        f"{plural(len(parameters), 'trainable parameter')} {verb(len(parameters), 'is')} in no param "
        f"group, so {'it never changes' if len(parameters) == 1 else 'they never change'}: {listed}",
        hint=f"Add {them} to the optimizer (build it after the model is complete, e.g. after "
        f"replacing the head), or freeze {them} with requires_grad_(False).",
        parameters=parameters, kind="trainable-missing",
    )


def parameters_in_two_groups(groups: dict[str, list[int]], listed: str) -> Finding:
    """LG504 for parameters held by more than one param group: ``groups`` maps each one's name to
    the numbers of its groups, ``listed`` shows the first few with their groups."""
    return FROZEN_IN_OPTIMIZER.finding(
        None,
        f"{plural(len(groups), 'parameter')} {verb(len(groups), 'is')} in more than one param group: {listed}",
        hint="Give each parameter to exactly one group (e.g. split by name: decay / no decay).",
        parameters=list(groups), groups=list(groups.values()), kind="in-two-groups",
    )


def foreign_tensors_optimised(shapes: list[list[int]], listed: str) -> Finding:
    """LG504 for tensors in the optimizer that are not parameters of the model (``shapes``: the
    shape of each, ``listed``: the first few shapes as messages show them)."""
    return FROZEN_IN_OPTIMIZER.finding(
        None,
        f"{plural(len(shapes), 'tensor')} in the optimizer {verb(len(shapes), 'is')} not "
        f"{'a parameter' if len(shapes) == 1 else 'parameters'} of this model "
        f"({noun(len(shapes), 'shape')} {listed}): the optimizer was built over another copy of the model",
        hint="Build the optimizer after the model is final (after copy.deepcopy, "
        "loading, wrapping) and over that model's parameters.",
        shapes=shapes, kind="foreign-tensors",
    )
