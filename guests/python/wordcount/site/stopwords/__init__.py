"""A stand-in for a pure-Python dependency installed in a site-packages."""

ENGLISH = frozenset("a an and are as at be by for from in is it of on or that the to was with".split())
