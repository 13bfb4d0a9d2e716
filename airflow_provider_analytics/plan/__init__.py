"""The tracking plan kept in sync with a file in the repository."""
