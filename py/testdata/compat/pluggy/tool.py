import pluggy

hookspec = pluggy.HookspecMarker("demo")
hookimpl = pluggy.HookimplMarker("demo")


class Spec:
    @hookspec
    def transform(self, value):
        """Transform a value."""

    @hookspec(firstresult=True)
    def pick(self, options):
        """Pick one."""


class Upper:
    @hookimpl
    def transform(self, value):
        return value.upper()

    @hookimpl
    def pick(self, options):
        return None


class Reverse:
    @hookimpl(tryfirst=True)
    def transform(self, value):
        return value[::-1]

    @hookimpl
    def pick(self, options):
        return options[-1]


class Wrap:
    @hookimpl(hookwrapper=True)
    def transform(self, value):
        outcome = yield
        outcome.force_result(sorted(outcome.get_result()))


def execute(inp):
    pm = pluggy.PluginManager("demo")
    pm.add_hookspecs(Spec)
    for p in (Upper(), Reverse(), Wrap()):
        pm.register(p)
    return {
        "transform": pm.hook.transform(value=inp["value"]),
        "pick": pm.hook.pick(options=inp["options"]),
        "plugins": sorted(type(p).__name__ for p in pm.get_plugins()),
    }
