"""The built-in generators, one module each (`<source>_<task>.py`), with the pieces only
generators use: shared answer-task parts (`answers`), the log window helpers
(`logs_common`), logs.script's facts, held-back directories and programs
(`logs_script_facts`, `logs_script_heldback`, `logs_script_programs`), the incident links
a generator reads (`incidents`), the knowledge-base search a reply task ships
(`kb_search`), triage's learnability gate (`learnability`) and commits.repair's machinery
(`repair/`). The build that runs them is one level up, in `rlforge.tasks` (registry, spec,
render, staging, splits, versions, build)."""
