"""The shared kernel every layer may import: the domain types (``domain``), the domain
errors (``errors``), the caller's deadline (``deadline``), the answer written with a change
(``request_answer``), what every confluent-kafka client shares (``kafka_clients``), Kafka's
ConfigDef with which plugins and the worker declare and parse their keys (``configdef``),
the properties-file reader (``properties``), old module paths kept working
(``deprecation``), what a failure shows (``traces``: a status
trace, a failed record's log summary) and the garbage collector's settings for processes
that build batches of records (``gc_tuning``) and the timing of a worker's start
(``start_phases``).

Its modules import nothing of the package beyond the kernel itself, so that importing one
from any layer never pulls in another layer."""
