import six
from six.moves import reduce, urllib


class Meta(type):
    def __new__(mcs, name, bases, ns):
        ns["tag"] = name.lower()
        return super().__new__(mcs, name, bases, ns)


class Base(six.with_metaclass(Meta, object)):
    pass


@six.add_metaclass(Meta)
class Other(object):
    pass


def execute(inp):
    d = inp["mapping"]
    return {
        "items": sorted(six.iteritems(d)),
        "text": [six.ensure_text(b"caf\xc3\xa9"), six.ensure_str("x"), six.ensure_binary("é").hex()],
        "types": [isinstance("s", six.string_types), isinstance(3, six.integer_types), six.PY3],
        "reduce": reduce(lambda a, b: a * b, inp["numbers"]),
        "quote": urllib.parse.quote(inp["path"]),
        "meta": [Base.tag, Other.tag],
        "b": six.b("abc").decode(), "u": six.u("abc"),
        "int2byte": six.int2byte(65).decode(),
    }
