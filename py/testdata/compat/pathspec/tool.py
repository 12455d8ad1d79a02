import pathspec


def execute(inp):
    spec = pathspec.PathSpec.from_lines("gitwildmatch", inp["gitignore"])
    git = pathspec.GitIgnoreSpec.from_lines(inp["gitignore"])
    return {"matched": sorted(spec.match_files(inp["paths"])),
            "git": sorted(git.match_files(inp["paths"])),
            "each": [spec.match_file(p) for p in inp["paths"]]}
