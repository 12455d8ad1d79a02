"""Loops forever: fuel, a deterministic instruction budget, ends it."""


def execute(payload):
    n = 0
    while True:
        n += 1
