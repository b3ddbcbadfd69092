"""The Connect data model and the record pipeline's plugins: schemas, structs, logical types,
headers, converters, transformations (SMTs) and predicates.

Pure code: no Kafka, no Spark, no gRPC, no threads. The runtime wires these into a task's
record path; the connectors room builds on them.
"""
