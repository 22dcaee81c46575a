"""docs/ops.md lists exactly the ops registered for vkml."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ops_md_is_current():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gen_ops_md.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
