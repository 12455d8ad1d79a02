import io
import zipfile

import zipp


def execute(inp):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, text in sorted(inp["files"].items()):
            zf.writestr(zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0)), text)
    zf = zipfile.ZipFile(buf)
    root = zipp.Path(zf)

    def walk(p):
        out = []
        for child in sorted(p.iterdir(), key=lambda c: c.name):
            out.append([str(child.at), child.is_dir(), walk(child) if child.is_dir() else child.read_text()])
        return out

    return {"tree": walk(root), "joined": (root / "docs" / "a.txt").read_text(),
            "exists": (root / "nope").exists()}
