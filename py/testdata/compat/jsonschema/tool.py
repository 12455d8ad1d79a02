import jsonschema
from jsonschema import Draft7Validator, Draft202012Validator, FormatChecker


def execute(inp):
    v = Draft7Validator(inp["schema"], format_checker=FormatChecker())
    errors = sorted(((list(e.absolute_path), e.validator, e.message) for e in v.iter_errors(inp["instance"])),
                    key=lambda t: (str(t[0]), t[1]))
    v2 = Draft202012Validator(inp["schema"])
    best = jsonschema.exceptions.best_match(v2.iter_errors(inp["instance"]))
    try:
        Draft7Validator.check_schema({"type": 5})
        schema_error = None
    except jsonschema.SchemaError as e:
        schema_error = e.message
    return {"valid": v.is_valid(inp["instance"]), "errors": errors, "best": best.message,
            "schema_error": schema_error, "good": v.is_valid(inp["good"])}
