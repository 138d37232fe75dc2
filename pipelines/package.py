"""``python -m pipelines.package [ZIP]``: the code a Spark cluster's executors need, zipped.

The zip holds the ``mqcore`` and ``pipelines`` packages (with mqcore's Lua
scripts) and is handed to ``spark-submit --py-files``. Third-party libraries are
not in it (hiredis and orjson are compiled): install them on the nodes, or ship
a packed virtualenv (docs/deploy.md).
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

from pipelines import PROJECT_ROOT

PACKAGES = ("mqcore", "pipelines")
SUFFIXES = (".py", ".lua", ".typed")
DEFAULT_ZIP = PROJECT_ROOT / "dist" / "opsdash-pipelines.zip"


def build(target: Path = DEFAULT_ZIP) -> Path:
    """Write the zip (deterministic order); returns its path."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for package in PACKAGES:
            for path in sorted((PROJECT_ROOT / package).rglob("*")):
                if path.is_file() and path.suffix in SUFFIXES and "__pycache__" not in path.parts:
                    archive.write(path, path.relative_to(PROJECT_ROOT).as_posix())
    return target


if __name__ == "__main__":
    built = build(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_ZIP)
    print(built)
