"""A Harbor agent for the tests: it runs the shell commands listed (a JSON list) in the
file named by $RLFORGE_TEST_COMMANDS, one `exec` each, as the task's agent user, and
ignores the instruction; with $RLFORGE_TEST_RESULTS set, it writes there (a JSON list,
rewritten after each command) each command's exit code and stderr. Imported by Harbor (in
.venv-harbor) as `harbor_agents:Commands`.
"""

import json
import os

from harbor.agents.base import BaseAgent
from harbor.agents.capabilities import AgentCapabilities


class Commands(BaseAgent):
    capabilities = AgentCapabilities()

    @staticmethod
    def name() -> str:
        return "rlforge-test-commands"

    def version(self) -> str:
        return "1"

    async def setup(self, environment) -> None:
        pass

    async def run(self, instruction, environment, context) -> None:
        with open(os.environ["RLFORGE_TEST_COMMANDS"]) as fh:
            commands = json.load(fh)
        results, where = [], os.environ.get("RLFORGE_TEST_RESULTS")
        for command in commands:
            result = await environment.exec(command, timeout_sec=600)
            results.append([result.return_code, result.stderr or ""])
            if where:
                with open(where, "w") as fh:
                    json.dump(results, fh)
