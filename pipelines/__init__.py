"""Stream pipelines as code (PySpark Structured Streaming over mqcore topics)."""
