"""The `lumen` command (the C++ command line shipped in the wheel).

`pip install .` installs the executable as lumen/bin/lumen and this module's
`main` as the `lumen` console script, which runs it with the same arguments:

    lumen generate -m model.gguf -p "Once upon a time" -n 64
    python -m lumen._cli --help
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def executable() -> Path:
    """The lumen executable: in the installed package, $LUMEN_CLI, or an in-tree build."""
    here = Path(__file__).resolve().parent
    candidates = [here / "bin" / "lumen"]
    if os.environ.get("LUMEN_CLI"):
        candidates.insert(0, Path(os.environ["LUMEN_CLI"]))
    candidates.append(here.parent.parent / "build" / "tools" / "lumen")  # python/lumen -> repository root
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return c
    tried = ", ".join(str(c) for c in candidates)
    raise FileNotFoundError(f"lumen: the command-line executable was not found (tried {tried}); "
                            "build it (cmake --build build) or reinstall the package")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        exe = executable()
    except FileNotFoundError as e:
        print(e, file=sys.stderr)
        return 1
    if argv is None and os.name == "posix":
        os.execv(str(exe), ["lumen", *args])  # the command replaces this process: signals and exit codes pass through
    return subprocess.call(["lumen", *args], executable=str(exe))


if __name__ == "__main__":
    sys.exit(main())
