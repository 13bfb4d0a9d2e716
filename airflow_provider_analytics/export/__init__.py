"""The cohort export: query, columns and types, the one decoding rule, the stream and the shards."""
