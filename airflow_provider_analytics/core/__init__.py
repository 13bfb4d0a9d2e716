"""The ground floor of the package (errors, redaction, value rules, strict JSON, line
splitting, export records, report dates): what every other layer shares; it imports nothing of
the package outside ``core``."""
