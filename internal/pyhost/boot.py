# wasmgate's bootstrap for CPython. The host runs it as the interpreter's
# program (from stdin), once: it says where its functions are and stops at
# a clock reading the host waits for, where the host snapshots the
# interpreter (the base). For each piece of code, the host calls
# _wg_stage2 from the base (through the function type's own tp_call) with
# the code's configuration as stdin: it makes the code's tree importable,
# loads the executor (or compiles the program) and returns, and the host
# snapshots that. Every call starts from the code's snapshot and calls
# _wg_call (or _wg_main).
import sys
import os
import json
import base64
import time

# What loading code and running programs use, imported here, in the base,
# so that loading a piece of code costs only its own imports.
import atexit
import importlib
import importlib.machinery
import importlib.util
import inspect
import io
import traceback
import types


def _wg_install(cfg):
    import importlib.machinery
    import importlib.util

    files = {p: base64.b64decode(v) for p, v in cfg["files"].items()}
    dirs = set()
    for p in files:
        d = p.rsplit("/", 1)[0]
        while d and d not in dirs:
            dirs.add(d)
            d = d.rsplit("/", 1)[0]
    roots = list(cfg["roots"])

    class _Node:
        """A file or directory of the code's tree, as importlib.resources
        reads one (a Traversable)."""

        def __init__(self, path):
            self._path = path

        @property
        def name(self):
            return self._path.rsplit("/", 1)[-1]

        def is_file(self):
            return self._path in files

        def is_dir(self):
            return self._path in dirs

        def iterdir(self):
            if not self.is_dir():
                raise NotADirectoryError(20, "Not a directory", self._path)
            prefix = self._path + "/"
            names = sorted({p[len(prefix):].split("/", 1)[0] for p in (*files, *dirs) if p.startswith(prefix)})
            return iter([_Node(prefix + n) for n in names])

        def joinpath(self, *descendants):
            parts = self._path.split("/")
            for d in descendants:
                for part in str(d).replace("\\", "/").split("/"):
                    if part in ("", "."):
                        continue
                    if part == "..":
                        if len(parts) > 1:
                            parts.pop()
                        continue
                    parts.append(part)
            return _Node("/".join(parts))

        __truediv__ = joinpath

        def open(self, mode="r", *args, **kwargs):
            import io
            if not self.is_file():
                raise FileNotFoundError(2, "No such file or directory", self._path)
            if "b" in mode:
                return io.BytesIO(files[self._path])
            return io.TextIOWrapper(io.BytesIO(files[self._path]), *args, **kwargs)

        def read_bytes(self):
            with self.open("rb") as f:
                return f.read()

        def read_text(self, encoding=None, errors=None):
            with self.open("r", encoding=encoding, errors=errors) as f:
                return f.read()

        def __str__(self):
            return self._path

        def __repr__(self):
            return "<wasmgate file %s>" % self._path

        def __eq__(self, other):
            return isinstance(other, _Node) and other._path == self._path

        def __hash__(self):
            return hash(self._path)

    class _Resources:
        def __init__(self, path):
            self._path = path

        def files(self):
            return _Node(self._path)

        # The older ResourceReader protocol, for callers that use it.
        def open_resource(self, resource):
            return _Node(self._path).joinpath(resource).open("rb")

        def resource_path(self, resource):
            raise FileNotFoundError(2, "No such file or directory", self._path + "/" + resource)

        def is_resource(self, name):
            return _Node(self._path).joinpath(name).is_file()

        def contents(self):
            return [n.name for n in _Node(self._path).iterdir()]

    class _ShimLoader:
        def __init__(self, name, source):
            self.name, self.source = name, source

        def create_module(self, spec):
            return None

        def exec_module(self, module):
            exec(compile(self.source, "<wasmgate:%s>" % self.name, "exec", dont_inherit=True), module.__dict__)

    class _Loader:
        def __init__(self, path):
            self.path = path

        def create_module(self, spec):
            return None

        def exec_module(self, module):
            code = compile(files[self.path], self.path, "exec", dont_inherit=True)
            exec(code, module.__dict__)

        def is_package(self, fullname):
            return self.path.endswith("/__init__.py")

        def get_source(self, fullname):
            return importlib.util.decode_source(files[self.path])

        def get_code(self, fullname):
            return compile(files[self.path], self.path, "exec", dont_inherit=True)

        def get_filename(self, fullname):
            return self.path

        def get_data(self, path):
            try:
                return files[path]
            except KeyError:
                raise FileNotFoundError(2, "No such file or directory", path) from None

        def get_resource_reader(self, fullname):
            if not self.is_package(fullname):
                return None
            return _Resources(self.path.rsplit("/", 1)[0])

    # The distributions' metadata directories, for importlib.metadata.
    meta_dirs = sorted(d for d in dirs if d.rsplit("/", 1)[0] in roots and d.endswith((".dist-info", ".egg-info")))

    class _Finder:
        @classmethod
        def find_spec(cls, fullname, path=None, target=None):
            shim = _WG_SHIMS.get(fullname)
            if shim is not None:
                return importlib.util.spec_from_loader(fullname, _ShimLoader(fullname, shim))
            tail = fullname.rpartition(".")[2]
            bases = roots if path is None else [b for b in path if isinstance(b, str)]
            for base in bases:
                d = base + "/" + tail
                init = d + "/__init__.py"
                if init in files:
                    spec = importlib.util.spec_from_loader(fullname, _Loader(init), origin=init, is_package=True)
                    spec.submodule_search_locations = [d]
                    spec.has_location = True
                    return spec
                if d + ".py" in files:
                    spec = importlib.util.spec_from_loader(fullname, _Loader(d + ".py"), origin=d + ".py")
                    spec.has_location = True
                    return spec
            found = [base + "/" + tail for base in bases if base + "/" + tail in dirs]
            if found:
                spec = importlib.machinery.ModuleSpec(fullname, None, is_package=True)
                spec.submodule_search_locations = found
                return spec
            return None

        @classmethod
        def invalidate_caches(cls):
            pass

        @classmethod
        def find_distributions(cls, context=None):
            if not meta_dirs:
                return iter(())
            import importlib.metadata
            import re

            def norm(n):
                return re.sub(r"[-_.]+", "_", n).lower()

            class _Distribution(importlib.metadata.Distribution):
                def __init__(self, path):
                    self._path = path

                def read_text(self, filename):
                    b = files.get(self._path + "/" + filename)
                    return None if b is None else b.decode("utf-8", "replace")

                def locate_file(self, path):
                    return _Node(self._path.rsplit("/", 1)[0]).joinpath(path)

            name = getattr(context, "name", None)
            found = []
            for d in meta_dirs:
                dist = d.rsplit("/", 1)[-1].rsplit(".", 1)[0].split("-", 1)[0]
                if name is None or norm(dist) == norm(name):
                    found.append(_Distribution(d))
            return iter(found)

    sys.meta_path.insert(0, _Finder)
    sys.path[:] = [p for p in sys.path if p not in ("", ".", os.getcwd())]
    return files


# What this CPython's standard library lacks and pure-Python libraries
# import: WASI has no threads nor processes, so the executors run each task
# when it is submitted, in the caller, which keeps every run deterministic.
_WG_POOL = """
from concurrent.futures import _base


class Broken%(kind)sPool(_base.BrokenExecutor):
    pass


class %(kind)sPoolExecutor(_base.Executor):
    \"\"\"wasmgate: WASI runs no %(what)s; each task runs when it is submitted.\"\"\"

    def __init__(self, max_workers=None, *args, initializer=None, initargs=(), **kwargs):
        if max_workers is not None and max_workers <= 0:
            raise ValueError("max_workers must be greater than 0")
        self._max_workers = max_workers or 1
        self._initializer, self._initargs = initializer, initargs
        self._started = False
        self._shutdown = False

    def submit(self, fn, /, *args, **kwargs):
        if self._shutdown:
            raise RuntimeError("cannot schedule new futures after shutdown")
        if not self._started:
            self._started = True
            if self._initializer is not None:
                try:
                    self._initializer(*self._initargs)
                except BaseException:
                    self._shutdown = True
                    raise Broken%(kind)sPool("A %(what)s initializer failed, the pool is not usable anymore")
        f = _base.Future()
        if f.set_running_or_notify_cancel():
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:
                f.set_exception(exc)
            else:
                f.set_result(result)
        return f

    submit.__doc__ = _base.Executor.submit.__doc__

    def shutdown(self, wait=True, *, cancel_futures=False):
        self._shutdown = True
"""
_WG_SHIMS = {
    "concurrent.futures.thread": _WG_POOL % {"kind": "Thread", "what": "threads"},
    "concurrent.futures.process": _WG_POOL % {"kind": "Process", "what": "processes"},
}


def _wg_write(fd, data):
    while data:
        n = os.write(fd, data)
        data = data[n:]


def _wg_read_all():
    chunks = []
    while True:
        b = os.read(0, 1 << 16)
        if not b:
            return b"".join(chunks)
        chunks.append(b)


def _wg_read_exactly(n):
    chunks = []
    while n > 0:
        b = os.read(0, n)
        if not b:
            break
        chunks.append(b)
        n -= len(b)
    return b"".join(chunks)


def _wg_describe(e):
    name = type(e).__qualname__
    mod = type(e).__module__
    if mod not in ("builtins", "__main__", None):
        name = mod + "." + name
    text = str(e)
    return name + ": " + text if text else name


_WG_FIELDS = ("action", "payload", "trace_id", "ts_utc")


class ActionRequest:
    """The request an executor class's execute(req) gets: action, payload,
    trace_id and ts_utc, as attributes or items.

    The action, trace id and time come as a header of a fixed size, decoded
    when first read: an executor that does not read them spends the same
    fuel whatever they are."""

    __slots__ = ("payload", "_head", "_meta")

    def __init__(self, head, payload):
        self._head = head
        self._meta = None
        self.payload = payload

    def _field(self, name):
        if self._meta is None:
            self._meta = json.loads(self._head)
        return self._meta.get(name)

    action = property(lambda self: self._field("action"))
    trace_id = property(lambda self: self._field("trace_id"))
    ts_utc = property(lambda self: self._field("ts_utc"))

    def __getitem__(self, key):
        if key in _WG_FIELDS:
            return getattr(self, key)
        raise KeyError(key)

    def get(self, key, default=None):
        return getattr(self, key) if key in _WG_FIELDS else default

    def __repr__(self):
        return "ActionRequest(action=%r, payload=%r, trace_id=%r, ts_utc=%r)" % (
            self.action, self.payload, self.trace_id, self.ts_utc)


class _WgRefused(Exception):
    pass


def _wg_manifest_of(obj):
    def field(name):
        v = getattr(obj, name, None)
        return v

    limits = field("limits")
    lim = None
    if limits is not None:
        lim = {}
        for k in ("timeout_ms", "max_payload_bytes", "max_depth", "max_list_items",
                  "fuel", "memory_pages", "max_output_bytes"):
            v = limits.get(k) if isinstance(limits, dict) else getattr(limits, k, None)
            if v is not None:
                if isinstance(v, bool) or not isinstance(v, int):
                    raise _WgRefused("limits.%s must be an integer, not %r" % (k, v))
                lim[k] = v
    caps = field("capabilities")
    if caps is not None:
        if isinstance(caps, (str, bytes)) or not all(isinstance(c, str) for c in caps):
            raise _WgRefused("capabilities must be a list of strings, not %r" % (caps,))
        caps = list(caps)
    out = {}
    for k in ("executor_id", "version"):
        v = field(k)
        if v is not None:
            if not isinstance(v, str):
                raise _WgRefused("%s must be a string, not %r" % (k, v))
            out[k] = v
    if caps is not None:
        out["capabilities"] = caps
    if lim is not None:
        out["limits"] = lim
    for k in ("title", "description"):
        v = field(k)
        if isinstance(v, str):
            out[k] = v
    for k in ("input_schema", "output_schema"):
        v = field(k)
        if isinstance(v, dict):
            out[k] = v
    return out


def _wg_load(cfg):
    import importlib
    import inspect

    files = _wg_install(cfg)
    if cfg["mode"] == "program":
        src = files[cfg["main"]]
        try:
            return {"code": compile(src, cfg["main"], "exec", dont_inherit=True), "source": src}, None
        except (SyntaxError, ValueError) as e:
            # python3 reports a program that does not compile when it is
            # run: on stderr, as the exception alone, with exit status 1.
            import traceback
            return {"code": None, "error": "".join(traceback.format_exception_only(e))}, None
    if cfg["module"] in sys.modules:
        raise _WgRefused(
            "%s.py has the name of the module %s, which the interpreter has imported already: rename the file"
            % (cfg["module"], cfg["module"]))
    mod = importlib.import_module(cfg["module"])
    cls_name = cfg["class"]
    if not cls_name:
        fn = getattr(mod, "execute", None)
        if callable(fn) and not inspect.isclass(fn):
            return {"fn": fn, "req": False}, None
        found = [v for v in vars(mod).values()
                 if inspect.isclass(v) and v.__module__ == mod.__name__
                 and callable(getattr(v, "execute", None)) and hasattr(v, "executor_id")]
        if len(found) != 1:
            raise _WgRefused(
                "%s defines no function execute(input)%s; define one, or name the executor class (--py-class, \"class\")"
                % (cfg["module"], "" if not found else " and %d executor classes (%s)" % (
                    len(found), ", ".join(sorted(c.__name__ for c in found)))))
        cls_name = found[0].__name__
    cls = getattr(mod, cls_name, None)
    if cls is None:
        raise _WgRefused("%s has no class %s" % (cfg["module"], cls_name))
    if not inspect.isclass(cls):
        raise _WgRefused("%s.%s is not a class" % (cfg["module"], cls_name))
    inst = cls()
    fn = getattr(inst, "execute", None)
    if not callable(fn):
        raise _WgRefused("%s.%s has no method execute(self, req)" % (cfg["module"], cls_name))
    return {"fn": fn, "req": True}, _wg_manifest_of(inst)


def _wg_fresh():
    # The random module was seeded when it was imported, before the
    # snapshot: every call would draw the same numbers. Seed it again from
    # the call's own stream, which the host derives from the call's input,
    # as os.urandom and uuid.uuid4 read it.
    r = sys.modules.get("random")
    if r is not None and hasattr(r, "seed"):
        r.seed(os.urandom(32))


# The size of the request header an executor class's call reads first
# (pyhost.requestHeader).
_WG_HEAD = 1024


def _wg_call():
    _wg_fresh()
    head = _wg_read_exactly(_WG_HEAD) if _WG_TARGET["req"] else None
    data = _wg_read_all()
    saved = sys.stdout
    sys.stdout = sys.stderr
    try:
        if head is not None:
            arg = ActionRequest(head, json.loads(data))
        else:
            arg = json.loads(data)
        result = _WG_TARGET["fn"](arg)
    except BaseException as e:
        sys.stdout = saved
        _wg_flush()
        _wg_write(1, _wg_describe(e).encode("utf-8", "backslashreplace"))
        return False
    sys.stdout = saved
    _wg_flush()
    if result is None:
        return None
    try:
        out = json.dumps(result, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError) as e:
        _wg_write(1, _wg_describe(e).encode("utf-8", "backslashreplace"))
        return Ellipsis
    _wg_write(1, out.encode("utf-8", "surrogatepass"))
    return None


def _wg_flush():
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except BaseException:
            pass


class _WgMainSource:
    """The __loader__ of a program's __main__: what linecache asks for the
    program's source, which is in no file the interpreter can open."""

    def __init__(self, source):
        self.source = source

    def get_source(self, fullname):
        import importlib.util
        return importlib.util.decode_source(self.source)


def _wg_main():
    import types

    _wg_fresh()
    n = int(_wg_read_exactly(10))
    argv = json.loads(_wg_read_exactly(n))
    sys.argv[:] = argv
    if _WG_TARGET["code"] is None:
        _wg_write(2, _WG_TARGET["error"].encode("utf-8", "backslashreplace"))
        os._exit(1)
    main = types.ModuleType("__main__")
    main.__file__ = argv[0]
    main.__builtins__ = __builtins__
    # Tracebacks quote the program's lines, as python3's read from its file.
    main.__loader__ = _WgMainSource(_WG_TARGET["source"])
    sys.modules["__main__"] = main
    code = 0
    try:
        exec(_WG_TARGET["code"], main.__dict__)
    except SystemExit as e:
        c = e.code
        if c is None:
            code = 0
        elif isinstance(c, int):
            code = c & 0xFF
        else:
            try:
                print(c, file=sys.stderr)
            except BaseException:
                pass
            code = 1
    except BaseException as e:
        # As python3 reports it: through sys.excepthook, the traceback
        # from the program's own frame (this function's left out). The
        # default hook quotes only lines of files it can open, which the
        # program's are not: the traceback module, which python3's hook
        # matches, reads them through the modules' loaders.
        try:
            tb = e.__traceback__.tb_next
            e = e.with_traceback(tb)
            if sys.excepthook is sys.__excepthook__:
                import traceback
                traceback.print_exception(e)
            else:
                sys.excepthook(type(e), e, tb)
        except BaseException:
            pass
        code = 1
    # As python3 ends: the program's atexit functions, then the streams.
    try:
        import atexit
        atexit._run_exitfuncs()
    except BaseException:
        pass
    _wg_flush()
    os._exit(code)


# The interpreter's own C stack is 512 KiB, at the bottom of memory, and
# CPython uses several KiB of it for each call that goes through C (a
# recursive __repr__, a generator passed to sum()): calls run on this
# buffer instead, which the host points the stack pointer at.
_WG_STACK_BYTES = 16 << 20
_WG_STACK = __import__("array").array("B", [0]) * _WG_STACK_BYTES



def _wg_stage2():
    """Loads the code whose configuration is the call's stdin, from the
    interpreter's base snapshot: writes where to call it and returns None,
    or writes why it cannot be loaded and returns False. The host
    snapshots the instance when it returns."""
    global _WG_TARGET, _WG_MANIFEST
    try:
        cfg = json.loads(_wg_read_all())
        _WG_TARGET, _WG_MANIFEST = _wg_load(cfg)
        ready = {
            "call": id(_wg_main if cfg["mode"] == "program" else _wg_call),
            "manifest": _WG_MANIFEST,
        }
    except BaseException as e:
        _wg_flush()
        msg = str(e) if isinstance(e, _WgRefused) else _wg_describe(e)
        _wg_write(1, b"wasmgate-python-refused " + msg.encode("utf-8", "backslashreplace"))
        return False
    # Free room at the top of the C heap, so that a call needing a little
    # more than loading left does not grow linear memory: an instance whose
    # memory grew cannot be reset to the snapshot for the next call, and a
    # new one costs milliseconds (the interpreter's table of 6,000
    # functions filled again). The room is zeros, which the snapshot does
    # not store.
    room = bytearray(2 << 20)
    del room
    _wg_flush()
    _wg_write(1, b"wasmgate-python-ready " + json.dumps(ready).encode())
    return None


# The base: the interpreter started, this program run, nothing of the code
# loaded. The host snapshots it at the clock reading below, once for every
# piece of code, and loads each from it by calling _wg_stage2.
_wg_flush()
_wg_write(1, b"wasmgate-python-base " + json.dumps({
    "load": id(_wg_stage2),
    "args": id(()),
    "none": id(None),
    "false": id(False),
    "notjson": id(Ellipsis),
    "stack": _WG_STACK.buffer_info()[0] + _WG_STACK_BYTES,
    "stack_bottom": _WG_STACK.buffer_info()[0],
}).encode())
time.monotonic()
