"""LG507: the definition of the code, and the findings labelguard.torch reports with it from
what it found in the freezes of a model."""

from __future__ import annotations

from labelguard.core.findings import Finding
from labelguard.core.registry import define
from labelguard.core.text import plural, verb

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
    fix_safety="display-only",
)


def attribute_freezes_nothing(modules: list[str], modules_listed: str, parameters: list[str],
                              parameters_listed: str) -> Finding:
    """LG507 for ``modules`` (qualified names) that set ``requires_grad = False`` as a plain
    attribute while their ``parameters`` stay trainable; ``modules_listed`` and
    ``parameters_listed`` show the first few of each as messages name them."""
    return NOOP_FREEZE.finding(
        None,
        f"{modules_listed} {verb(len(modules), 'sets')} requires_grad = False as a plain attribute, "
        f"which freezes nothing: {plural(len(parameters), 'parameter')} still "
        f"{verb(len(parameters), 'has')} requires_grad=True and "
        f"{verb(len(parameters), 'is')} trained: {parameters_listed}",
        hint="Call the module's method instead, self.requires_grad_(False) (with the "
        "underscore), or set p.requires_grad = False for each p in self.parameters(); then "
        "build the optimizer over p for p in model.parameters() if p.requires_grad.",
        modules=modules, parameters=parameters, kind="attribute",
    )


def declared_freeze_missed(parameters: list[str], listed: str) -> Finding:
    """LG507 for ``parameters`` declared frozen that are still trainable (``listed`` shows the
    first few, each with the type of the module that holds it)."""
    count = len(parameters)
    return NOOP_FREEZE.finding(
        None,
        f"{plural(count, 'parameter')} declared frozen still {verb(count, 'has')} requires_grad=True and "
        f"{verb(count, 'is')} trained: {listed}; the freeze did not reach {'it' if count == 1 else 'them'} "
        "(requires_grad_ on a copy.deepcopy, on p.data or on a state_dict() tensor changes that copy only)",
        hint="Freeze the model's own parameters: model.get_submodule(name).requires_grad_(False), "
        "or p.requires_grad = False for p in that module's parameters() (not state_dict()).",
        parameters=parameters, kind="declared",
    )
