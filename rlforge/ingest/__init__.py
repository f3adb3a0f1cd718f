"""Ingest: one module per source (tickets, commits, logs), the same face on each."""
