import dataclasses
from typing import get_type_hints

from typing_extensions import (Annotated, Literal, NotRequired, Protocol, Required, TypedDict, get_args,
                               get_origin, runtime_checkable)


class Movie(TypedDict, total=False):
    title: Required[str]
    year: NotRequired[int]
    rating: Annotated[float, "0..10"]


@runtime_checkable
class Closable(Protocol):
    def close(self) -> None: ...


@dataclasses.dataclass
class File:
    name: str

    def close(self):
        return None


def execute(inp):
    hints = get_type_hints(Movie, include_extras=True)
    movie = Movie(**inp["movie"])
    kind = Literal["a", "b"]
    return {
        "required": sorted(Movie.__required_keys__),
        "optional": sorted(Movie.__optional_keys__),
        "hints": {k: repr(v) for k, v in sorted(hints.items())},
        "annotated": [repr(a) for a in get_args(hints["rating"])],
        "literal": [list(get_args(kind)), repr(get_origin(kind))],
        "protocol": [isinstance(File("x"), Closable), isinstance(inp, Closable)],
        "movie": movie,
    }
