"""Exit 0 when this Python has every pin of requirements.txt (and requirements-nodeps.txt) and imports codeswitch from this checkout.

Usage: python scripts/check_env.py [REPO_ROOT]   (prints what is missing or off)
"""

import sys
from importlib import metadata
from pathlib import Path

root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1]).resolve()
problems = []
if not ((3, 11) <= sys.version_info[:2] <= (3, 12)):
    problems.append(f"Python {sys.version.split()[0]} (need 3.11 or 3.12)")
for line in [l for f in ("requirements.txt", "requirements-nodeps.txt") for l in (root / f).read_text().splitlines()]:
    line = line.split("#")[0].strip()
    if not line or "==" not in line:
        continue
    name, want = (s.strip() for s in line.split("==", 1))
    try:
        have = metadata.version(name)
    except metadata.PackageNotFoundError:
        problems.append(f"{name} not installed (want {want})")
        continue
    if have.split("+")[0] != want:
        problems.append(f"{name} {have} (want {want})")
try:
    import codeswitch

    where = Path(codeswitch.__file__).resolve()
    if root / "lib" not in where.parents:
        problems.append(f"codeswitch imports from {where}, not from {root / 'lib'}")
except ImportError as exc:
    problems.append(f"codeswitch not importable: {exc}")
for p in problems:
    print("  -", p)
sys.exit(1 if problems else 0)
