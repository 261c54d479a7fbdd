"""audit_optimizer(model, optimizer): which parameters the optimizer should (not) hold (LG504),
and freezes that freeze nothing (LG507)."""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable

import torch
from torch import nn

from labelguard.rules.lg504 import (
    foreign_tensors_optimised,
    frozen_parameters_optimised,
    parameters_in_two_groups,
    trainable_parameters_missing,
)
from labelguard.rules.lg507 import attribute_freezes_nothing, declared_freeze_missed
from labelguard.core.findings import Finding
from labelguard.core.text import did_you_mean, shorten
from labelguard.errors import UsageError
from labelguard.torch._tensors import module_label

_LISTED = 8

# What can be declared frozen: a module's qualified name ("sub_mean", "" for the model), a
# parameter's ("sub_mean.weight"), or the module or parameter itself.
Frozen = Iterable["str | nn.Module | torch.Tensor"]


def audit_optimizer(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    *,
    frozen: Frozen | None = None,
) -> list[Finding]:
    """LG504 and LG507 findings about the parameters ``optimizer`` was built over.

    LG504: frozen parameters (``requires_grad=False``) handed to the optimizer, trainable
    parameters of ``model`` missing from every param group, parameters in more than one
    group, and tensors in the optimizer that are not parameters of ``model`` (an optimizer
    built over another copy of the model).

    LG507: freezes that freeze nothing (see :func:`freeze_findings`), for the parameters
    the optimizer trains.

    Args:
        model: the model being trained.
        optimizer: its optimizer.
        frozen: the modules or parameters meant to stay fixed (names such as
            ``"sub_mean"`` or the objects); each one still trainable is LG507.

    Example::

        >>> class MeanShift(nn.Conv2d):  # RCAN  # doctest: +SKIP
        ...     def __init__(self):
        ...         super().__init__(3, 3, 1)
        ...         self.requires_grad = False  # freezes nothing
        >>> audit_optimizer(model, torch.optim.Adam(model.parameters()))  # doctest: +SKIP
        [Finding(code='LG507', ... "'sub_mean' (MeanShift) sets requires_grad = False as a plain attribute ...")]
    """
    findings = freeze_findings(model, optimizer, frozen=frozen)
    findings.extend(_optimizer_findings(model, optimizer))
    return findings


def freeze_findings(
    model: nn.Module,
    optimizer: torch.optim.Optimizer | None = None,
    *,
    frozen: Frozen | None = None,
) -> list[Finding]:
    """LG507: modules that set ``requires_grad = False`` as a plain attribute while their
    parameters stay trainable, and declared-frozen modules or parameters that are trainable
    (``requires_grad_`` applied to a copy, ``.data`` or a ``state_dict()`` tensor).

    With ``optimizer``, only parameters it holds count: a trainable parameter that no param
    group holds never changes, so its freeze is cosmetic, not broken.

    Raises:
        UsageError: ``frozen`` names a module or parameter the model does not have.
    """
    held = None if optimizer is None else {id(p) for g in optimizer.param_groups for p in g["params"]}

    def trained(parameter: torch.Tensor) -> bool:
        return parameter.requires_grad and (held is None or id(parameter) in held)

    findings = []
    flagged: dict[str, nn.Module] = {}
    parameters: dict[str, None] = {}
    for name, module in model.named_modules():
        if module.__dict__.get("requires_grad") is not False:
            continue
        loose = [n for n, p in module.named_parameters(prefix=name) if trained(p)]
        if loose:
            flagged[name] = module
            parameters.update(dict.fromkeys(loose))
    if flagged:
        modules = shorten(flagged.items(), _LISTED, lambda item: module_label(*item))
        listed = list(parameters)
        findings.append(attribute_freezes_nothing(list(flagged), modules, listed, _listed(model, listed)))
    declared = _declared(model, frozen or ())
    loose = [n for n, p in declared.items() if trained(p) and n not in parameters]
    if loose:
        findings.append(declared_freeze_missed(loose, _listed(model, loose)))
    return findings


def _declared(model: nn.Module, frozen: Frozen) -> dict[str, torch.Tensor]:
    """name -> parameter for every parameter the ``frozen`` entries cover."""
    by_id = {id(p): n for n, p in model.named_parameters()}
    modules = dict(model.named_modules())
    params = dict(model.named_parameters())
    covered: dict[str, torch.Tensor] = {}
    for item in frozen:
        if isinstance(item, nn.Module):
            name = next((n for n, m in modules.items() if m is item), None)
            if name is None:
                raise UsageError(f"frozen= names a {type(item).__name__} that is not a module of the model")
            item = name
        elif isinstance(item, torch.Tensor):
            if id(item) not in by_id:
                raise UsageError(f"frozen= names a tensor of shape {tuple(item.shape)} that is not a "
                                 "parameter of the model (a copy of one freezes nothing in the model)")
            item = by_id[id(item)]
        if item in params:
            covered[item] = params[item]
        elif item in modules:
            covered.update(modules[item].named_parameters(prefix=item))
        else:
            close = [n for n in [*modules, *params] if n and (item in n or n in item)][:2]
            raise UsageError(f"frozen= names {item!r}, which is neither a module nor a parameter of "
                             f"{type(model).__name__}{did_you_mean(close)}")
    return covered



def _optimizer_findings(model: nn.Module, optimizer: torch.optim.Optimizer) -> list[Finding]:
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
        findings.append(frozen_parameters_optimised(frozen, _listed(model, frozen)))
    missing = [n for n, p in model.named_parameters() if p.requires_grad and id(p) not in tensors]
    if missing:
        findings.append(trainable_parameters_missing(missing, _listed(model, missing)))
    shared = {names.get(i, f"<tensor {tuple(tensors[i].shape)}>"): g
              for i, g in groups_of.items() if len(g) > 1}
    if shared:
        listed = shorten(shared.items(), _LISTED, lambda item: f"{item[0]} (groups {', '.join(map(str, item[1]))})")
        findings.append(parameters_in_two_groups(shared, listed))
    foreign = [t for i, t in tensors.items() if i not in names]
    if foreign:
        shapes = shorten(foreign, _LISTED, lambda t: str(tuple(t.shape)))
        findings.append(foreign_tensors_optimised([list(t.shape) for t in foreign], shapes))
    return findings


def _listed(model: nn.Module, names: list[str]) -> str:
    """Parameter names with the type of the module holding them, the first few of them."""
    def named(name: str) -> str:
        owner = name.rpartition(".")[0]
        kind = type(model.get_submodule(owner)).__name__ if owner else type(model).__name__
        return f"{name} ({kind})"

    return shorten(names, _LISTED, named)
