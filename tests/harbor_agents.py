"""A Harbor agent for the tests: it runs the shell commands listed (a JSON list) in the
file named by $RLFORGE_TEST_COMMANDS, one `exec` each, as the task's agent user, and
ignores the instruction. Imported by Harbor (in .venv-harbor) as `harbor_agents:Commands`.
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
        for command in commands:
            await environment.exec(command, timeout_sec=600)
