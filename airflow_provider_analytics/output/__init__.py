"""Where tables land: destinations, storage, allowed roots, the one Parquet writer, Iceberg."""
