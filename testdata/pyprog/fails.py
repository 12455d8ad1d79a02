import json
import sys

config = json.loads(sys.stdin.read())
print("loaded", sorted(config))
print(config["limit"] * 2)
