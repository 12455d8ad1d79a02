from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version


def execute(inp):
    versions = sorted(Version(v) for v in inp["versions"])
    spec = SpecifierSet(inp["specifier"])
    req = Requirement(inp["requirement"])
    return {
        "sorted": [str(v) for v in versions],
        "allowed": [str(v) for v in spec.filter(versions)],
        "prereleases": [str(v) for v in spec.filter(versions, prereleases=True)],
        "requirement": {"name": req.name, "extras": sorted(req.extras),
                        "specifier": str(req.specifier), "marker": str(req.marker)},
        "marker": Marker(inp["marker"]).evaluate(inp["environment"]),
        "canonical": [canonicalize_name(n) for n in inp["names"]],
        "parts": [[v.major, v.minor, v.micro, v.is_prerelease, v.is_devrelease, str(v.base_version)] for v in versions],
    }
