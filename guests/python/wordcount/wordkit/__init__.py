import re
from collections import Counter

from stopwords import ENGLISH


def count_words(text):
    words = re.findall(r"[a-z']+", text.lower())
    return Counter(w for w in words if w not in ENGLISH)
