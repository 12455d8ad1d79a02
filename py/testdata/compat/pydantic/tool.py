from typing import Dict, List, Optional

from pydantic import BaseModel, Field, ValidationError, validator


class Address(BaseModel):
    city: str
    zip: str = Field(..., regex=r"^\d{5}$")


class User(BaseModel):
    id: int
    name: str = Field(..., min_length=2)
    email: Optional[str] = None
    tags: List[str] = []
    address: Address
    scores: Dict[str, float] = {}

    @validator("name")
    def title_case(cls, v):
        return v.title()


def execute(inp):
    good = User(**inp["good"])
    try:
        User(**inp["bad"])
        errors = None
    except ValidationError as e:
        errors = e.errors()
    return {"good": good.dict(), "json": good.json(), "errors": errors,
            "schema": User.schema()}
