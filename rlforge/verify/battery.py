"""The shortcut batteries as `rlforge validate` runs them: every generator's cheap
strategies turned into submissions for one task, read from what the task shows.

The builder screens its questions with the same strategies (so a fresh build passes);
validation runs them again on the rendered task, scored by the task's own verifier like
the adversarial submissions, so a task edited, built by another version or by a plug-in
that skipped the screen is caught: one it solves fails with the typed reason `shortcut`.
A battery applies where the task shows its question and the verifier holds the answer:

    logs.diagnose       `shortcuts` (the window and question in the instruction)
    logs.script         `shortcuts_script` (numeric facts: cheap programs, `solution.py`)
    incidents.diagnose  `shortcuts_incidents` (tasks that show the ticket and the logs)
    tickets.triage      `shortcuts_triage`, its text-only strategies (the others learn
                        from the other tickets of a build, which a task does not hold)
"""

from __future__ import annotations

from pathlib import Path

from rlforge.verify import shortcuts, shortcuts_incidents, shortcuts_script, shortcuts_triage


def _answers(guesses: dict[str, str]) -> list[dict]:
    return [{"name": f"shortcut_{name}", "files": {"answer.txt": guess}}
            for name, guess in guesses.items()]


def submissions(task_dir: Path, meta: dict) -> list[dict]:
    """Every battery's submissions for the task (none where no battery applies)."""
    generator = str(meta.get("metadata", {}).get("rlforge", {}).get("generator", ""))
    name = generator.partition("@")[0]
    if name == "incidents.diagnose":
        view = shortcuts_incidents.view_of_task(task_dir)
        return _answers(shortcuts_incidents.guesses(view)) if view else []
    if name == "tickets.triage":
        triage = shortcuts_triage.view_of_task(task_dir)
        if triage is None:
            return []
        text_only = {k: shortcuts_triage.STRATEGIES[k] for k in shortcuts_triage.TEXT_ONLY}
        return _answers(shortcuts_triage.guesses(triage, text_only))
    return shortcuts.submissions(task_dir, meta) + shortcuts_script.submissions(task_dir, meta)
