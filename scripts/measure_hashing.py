"""What content hashing by default costs (issue 41 item 6; docs/reproducibility.md, "What content hashing costs").

    PYTHONPATH=lib python scripts/measure_hashing.py smoke       # one process: every smoke plan built, every key computed
    PYTHONPATH=lib python scripts/measure_hashing.py big [GiB]   # a stand-in file in $TMPDIR: hashed vs trusted, then deleted

Run ``smoke`` twice (the first fills the digest cache); compare with ``CODESWITCH_HASH_BELOW=0`` (the old stat-only rule).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

from codeswitch.core import identity


def smoke() -> dict:
    original, stats = identity._digest, {"calls": 0, "hashed": 0, "bytes": 0, "seconds": 0.0, "files": set()}

    def timed(path, **kw):
        t = time.perf_counter()
        digest, new = original(path, **kw)
        stats["seconds"] += time.perf_counter() - t
        stats["calls"] += 1
        stats["files"].add(str(path))
        if new:
            stats["hashed"] += 1
            stats["bytes"] += Path(path).stat().st_size
        return digest, new

    identity._digest = timed
    from codeswitch.core.profiles import load_profile
    from codeswitch.pipeline.registry import packages

    t0 = time.perf_counter()
    profile = load_profile("smoke")
    keys = {p.SECTION: [s.key_hash() for s in p.plan(profile)] for p in packages()}
    return {"runs": sum(map(len, keys.values())), "files": len(stats["files"]), "re-hashed": stats["hashed"],
            "bytes re-hashed": stats["bytes"], "s in digests": round(stats["seconds"], 3),
            "s plans and keys": round(time.perf_counter() - t0, 2), "keys": keys}


def big(gib: float = 1.0) -> dict:
    with tempfile.TemporaryDirectory() as d:
        os.environ.setdefault("CODESWITCH_DIGESTS", str(Path(d) / "digests.json"))
        path = Path(d) / "big.bin"
        with path.open("wb") as f:
            for _ in range(int(gib * 1024)):
                f.write(os.urandom(2**20))
        t = time.perf_counter()
        identity.file_sha256s([path], fresh=True)
        hashed = time.perf_counter() - t
        identity._VERIFIED.clear()  # a later process
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", identity.TrustedStatNotice)
            t = time.perf_counter()
            identity.file_sha256(path)
            trusted = time.perf_counter() - t
    return {"GiB": gib, "s hashed": round(hashed, 2), "ms trusted": round(trusted * 1000, 2)}


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "smoke"
    out = smoke() if what == "smoke" else big(float(sys.argv[2]) if len(sys.argv) > 2 else 1.0)
    out.pop("keys", None) if "--keys" not in sys.argv else None
    print(json.dumps(out))
