"""Task generators, registered by name; see rlforge.tasks.registry."""
