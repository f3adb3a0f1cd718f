"""Host processes a test looks for by a marker in their command line (what a sandbox or a
trial left running, where an escape or a stuck thread would show)."""

from __future__ import annotations

import os
from pathlib import Path


def host_pids_with(marker: str) -> list[int]:
    """Pids of host processes whose command line contains `marker`."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                if marker.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    pids.append(int(entry))
            except OSError:
                pass
    return pids
