# The host side of py/compat_test.go: runs a compatibility corpus tool
# (APP/tool.py, its library in LIB) in the host's CPython as wasmgate runs it,
# and writes one line: {"output": value}, or {"error": "Type: message"} and
# whether it was raised by the import (as wasmgate's load refuses the tool).
# Usage: python3 -I -S -B compat_host.py APP LIB < input.json
import json
import sys

app, lib = sys.argv[1], sys.argv[2]
sys.path[:0] = [app, lib]
out = sys.stdout
# As in wasmgate, what the tool prints is not its output.
sys.stdout = sys.stderr
try:
    import tool
except BaseException as e:
    result = {"error": "%s: %s" % (type(e).__name__, e), "import": True}
else:
    try:
        result = {"output": tool.execute(json.loads(sys.stdin.read()))}
    except BaseException as e:
        result = {"error": "%s: %s" % (type(e).__name__, e)}
try:
    line = json.dumps(result, ensure_ascii=False, allow_nan=False)
except (TypeError, ValueError) as e:
    line = json.dumps({"error": "output is not JSON: %s: %s" % (type(e).__name__, e)})
out.write(line + "\n")
