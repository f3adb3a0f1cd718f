"""`cri`: Kubernetes containerd/CRI-O container logs (`<time> stdout F <message>`)."""

from __future__ import annotations

import polars as pl

from rlforge.ingest.logformats.base import LogFormat, finish_frame

_CRI = r"^(?P<ts_text>\d{4}-\d\d-\d\dT\S+) (?P<stream>stdout|stderr) (?P<tag>[PF])(?: (?P<message>.*))?$"


class CriFormat(LogFormat):
    """Kubernetes CRI (containerd, CRI-O) container logs; `P` lines continue."""

    def __init__(self):
        super().__init__()
        self.name = "cri"

    def continuation(self, lines: pl.Series) -> pl.Series:
        return pl.Series([False] * len(lines))

    def _parse(self, lines: pl.Series) -> pl.DataFrame:
        f = lines.str.extract_groups(_CRI).struct.unnest()
        f = f.with_columns(pl.col("message").fill_null(""))
        out = finish_frame(f, pl.col("ts_text").is_not_null(), ["stream"], None)
        return out.with_columns((f["tag"] == "P").fill_null(False).alias("continues"))
