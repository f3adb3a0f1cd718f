"""Log formats: detect one from a file's first lines, and parse chunks of lines into the
columns every log record has (time, host, component, level, message, other fields).

Every parser is vectorised (polars, Rust regex): a chunk of lines goes in as a Series and
comes out as a frame with one row per line and `ok` false where the line is not in the
format. The modules, from the bottom up:

- `levels`, `timestamps`: a record's level and time, from what loggers write;
- `base`: `LogFormat`, what every format is, and `finish_frame`, its common tail;
- one module per format: `header` (a header format string such as
  `'<Date> <Time> <Level> <Component>: <Content>'`), `syslog`, `access`, `jsonl` (with
  `docker`), `cri`, `plain`;
- `registry`: the formats by name (`LogFormatInfo`; third parties add theirs through the
  `rlforge.log_formats` entry-point group, calling `register_log_format`), `make_format`
  and `detect`;
- `reader`: a file as blocks of lines; `records`: lines into records, chunk by chunk.
"""
