"""LG3xx: boxes and coordinates."""

from labelguard.core.registry import define

BAD_BOX = define(
    "LG301", "box-degenerate-or-outside", "error",
    summary="a box is degenerate (xmin >= xmax, ymin >= ymax) or lies outside the image",
    why="""
Zero or negative box sizes give NaN/Inf in IoU and box-regression losses (log of a width
of 0), which later surfaces as a NaN loss or a device-side assert in a sampling kernel.""",
    bad="<bndbox><xmin>120</xmin><xmax>80</xmax>...  (corners flipped)",
    good="<bndbox><xmin>80</xmin><xmax>120</xmax>...",
    fix="Swap flipped corners, clip boxes to the image, drop zero-area boxes.",
)

YOLO_NOT_NORMALISED = define(
    "LG302", "yolo-coordinates-not-normalised", "error",
    summary="YOLO coordinates are not normalised to [0, 1]",
    why="""
YOLO rows hold centre and size as fractions of the image; pixel coordinates put every box
far outside the image and the loader drops or clips them.""",
    bad="0 320 240 64 48",
    good="0 0.5 0.5 0.1 0.1",
    fix="Divide x and width by the image width, y and height by the image height.",
)

DUPLICATE_BOX = define(
    "LG303", "duplicate-annotation", "warning",
    summary="duplicate boxes or rows in one annotation",
    why="Duplicates double the weight of an object in the loss and distort the matching of anchors.",
    bad="two identical rows '0 0.5 0.5 0.2 0.2' in one label file",
    good="one row per object",
    fix="Remove the repeated rows or objects.",
)
