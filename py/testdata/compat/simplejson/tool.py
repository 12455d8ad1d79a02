from decimal import Decimal

import simplejson


def execute(inp):
    obj = simplejson.loads(inp["json"], use_decimal=True)
    try:
        simplejson.loads('{"a": }')
        error = None
    except simplejson.JSONDecodeError as e:
        error = str(e)
    return {
        "types": {k: type(v).__name__ for k, v in obj.items()},
        "dumped": simplejson.dumps(obj, sort_keys=True, indent=2, use_decimal=True),
        "compact": simplejson.dumps({"d": Decimal("1.10"), "t": (1, 2), "big": 2 ** 70}, separators=(",", ":"),
                                    for_json=True, bigint_as_string=True, sort_keys=True),
        "error": error,
    }
