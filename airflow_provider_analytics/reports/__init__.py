"""Funnel and event analyses flattened into tidy tables, one per grain."""
