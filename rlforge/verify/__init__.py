"""Verifiers: reward components, reference answers, validation of every task."""
