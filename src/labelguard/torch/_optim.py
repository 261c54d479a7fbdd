"""audit_optimizer(model, optimizer): which parameters the optimizer should (not) hold (LG504)."""

from __future__ import annotations

from collections import defaultdict

import torch
from torch import nn

from labelguard.checks.runtime import FROZEN_IN_OPTIMIZER
from labelguard.core.findings import Finding
from labelguard.core.text import shorten

_LISTED = 8


def audit_optimizer(model: nn.Module, optimizer: torch.optim.Optimizer) -> list[Finding]:
    """LG504 findings about the parameters ``optimizer`` was built over.

    Flags frozen parameters (``requires_grad=False``) handed to the optimizer, trainable
    parameters of ``model`` missing from every param group, parameters in more than one
    group, and tensors in the optimizer that are not parameters of ``model`` (an
    optimizer built over another copy of the model).

    Example::

        >>> model.sub_mean.requires_grad_(False)  # RCAN's MeanShift  # doctest: +SKIP
        >>> audit_optimizer(model, torch.optim.Adam(model.parameters()))  # doctest: +SKIP
        [Finding(code='LG504', ... 'frozen parameters (requires_grad=False) are in the optimizer: sub_mean.weight, ...')]
    """
    names = {id(p): n for n, p in model.named_parameters()}
    groups_of: dict[int, list[int]] = defaultdict(list)
    tensors: dict[int, torch.Tensor] = {}
    for number, group in enumerate(optimizer.param_groups):
        for param in group["params"]:
            if number not in groups_of[id(param)]:
                groups_of[id(param)].append(number)
            tensors[id(param)] = param
    findings = []
    frozen = [names[i] for i, p in tensors.items() if i in names and not p.requires_grad]
    if frozen:
        findings.append(FROZEN_IN_OPTIMIZER.finding(
            None,
            f"{len(frozen)} frozen parameters (requires_grad=False) are in the optimizer: "
            f"{_listed(model, frozen)}",
            hint="Build the optimizer over the trainable parameters only: "
            "Adam(p for p in model.parameters() if p.requires_grad).",
            parameters=frozen, kind="frozen-in-optimizer",
        ))
    missing = [n for n, p in model.named_parameters() if p.requires_grad and id(p) not in tensors]
    if missing:
        findings.append(FROZEN_IN_OPTIMIZER.finding(
            None,
            f"{len(missing)} trainable parameters are in no param group, so they never change: "
            f"{_listed(model, missing)}",
            hint="Add them to the optimizer (build it after the model is complete, e.g. after "
            "replacing the head), or freeze them with requires_grad_(False).",
            parameters=missing, kind="trainable-missing",
        ))
    shared = {names.get(i, f"<tensor {tuple(tensors[i].shape)}>"): g
              for i, g in groups_of.items() if len(g) > 1}
    if shared:
        listed = ", ".join(f"{n} (groups {', '.join(map(str, g))})" for n, g in list(shared.items())[:_LISTED])
        findings.append(FROZEN_IN_OPTIMIZER.finding(
            None,
            f"{len(shared)} parameters are in more than one param group: {listed}",
            hint="Give each parameter to exactly one group (e.g. split by name: decay / no decay).",
            parameters=list(shared), groups=list(shared.values()), kind="in-two-groups",
        ))
    foreign = [t for i, t in tensors.items() if i not in names]
    if foreign:
        shapes = ", ".join(str(tuple(t.shape)) for t in foreign[:_LISTED])
        findings.append(FROZEN_IN_OPTIMIZER.finding(
            None,
            f"{len(foreign)} tensors in the optimizer are not parameters of this model "
            f"(shapes {shapes}): the optimizer was built over another copy of the model",
            hint="Build the optimizer after the model is final (after copy.deepcopy, "
            "loading, wrapping) and over that model's parameters.",
            shapes=[list(t.shape) for t in foreign], kind="foreign-tensors",
        ))
    return findings


def _listed(model: nn.Module, names: list[str]) -> str:
    """Parameter names with the type of the module holding them, the first few of them."""
    def named(name: str) -> str:
        owner = name.rpartition(".")[0]
        kind = type(model.get_submodule(owner)).__name__ if owner else type(model).__name__
        return f"{name} ({kind})"

    return shorten(names, _LISTED, named)
