import unicodedata


def normalize(text):
    return unicodedata.normalize("NFKC", text).casefold()
