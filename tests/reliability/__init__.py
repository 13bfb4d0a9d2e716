"""Reliability and security: fault matrix, bad input, fuzzing, secrets and load."""
