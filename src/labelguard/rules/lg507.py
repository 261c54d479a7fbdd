"""LG507: the definition of the code; the PyTorch runtime side (labelguard.torch) reports it."""

from labelguard.core.registry import define

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
