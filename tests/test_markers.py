"""The fast subset the README documents (`scripts/test.sh fast`) leaves the slow tests out, and the sandbox's own
tests carry the `sandbox` marker, as pytest collects them (no test is run here)."""

from __future__ import annotations

import re
import subprocess
import sys

from paths import ROOT

SECURITY = ["tests/security/test_limits.py", "tests/security/test_stress.py"]


def _collected(*args: str) -> list[str]:
    """Test ids pytest collects with these arguments (in the repository, as the docs run it)."""
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                           "-p", "no:cacheprovider", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode in (0, 5), proc.stdout + proc.stderr  # 5: none selected
    return [line for line in proc.stdout.splitlines() if "::" in line]


def test_the_documented_fast_subset_leaves_out_the_stress_test():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert re.search(r"scripts/test\.sh fast\s+# the fast subset", readme)
    script = (ROOT / "scripts" / "test.sh").read_text(encoding="utf-8")
    fast = re.search(r'= fast \].*?set -- -m "([^"]+)"', script, re.S).group(1)
    chosen = _collected("-m", fast, *SECURITY)
    assert not [t for t in chosen if "test_stress.py" in t], chosen
    assert any("test_limits.py" in t for t in chosen), chosen  # seconds each: fast
    assert _collected("-m", "not sandbox", *SECURITY) == []
