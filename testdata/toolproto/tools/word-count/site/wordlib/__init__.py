import re

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")


def words(text):
    return _WORD.findall(text)
