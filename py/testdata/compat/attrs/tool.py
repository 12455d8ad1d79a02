import attr
import attrs


@attrs.define
class Point:
    x: int = attrs.field(validator=attrs.validators.instance_of(int))
    y: int = 0

    def norm1(self):
        return abs(self.x) + abs(self.y)


@attr.s(frozen=True, slots=True)
class Tagged:
    name = attr.ib(converter=str.lower)
    tags = attr.ib(factory=list)


def execute(inp):
    pts = [Point(**p) for p in inp["points"]]
    t = Tagged(inp["name"], inp["tags"])
    try:
        Point(x="no")
        error = None
    except TypeError as e:
        error = str(e.args[0])
    try:
        t.name = "x"
        frozen = None
    except attr.exceptions.FrozenInstanceError as e:
        frozen = type(e).__name__
    return {
        "points": [attrs.asdict(p) for p in pts],
        "sorted": [repr(p) for p in sorted(pts, key=lambda p: (p.norm1(), p.x))],
        "evolved": repr(attrs.evolve(pts[0], y=99)),
        "tagged": [repr(t), attr.asdict(t), hash(t) == hash(Tagged(inp["name"], inp["tags"]))],
        "fields": [f.name for f in attrs.fields(Point)],
        "eq": pts[0] == Point(**inp["points"][0]),
        "error": error, "frozen": frozen,
    }
