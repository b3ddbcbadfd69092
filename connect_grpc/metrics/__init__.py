"""Prometheus metrics of a worker: its tasks' data movement, its connectors' and tasks'
states, the cluster's rebalances, the auto-restart policy's restarts, and (from ``api``)
the gRPC server's calls.

Names are Kafka Connect's metric names in the Prometheus form Kafka Connect users scrape
through a JMX exporter: ``kafka_connect_<group>_<metric>`` with the group's ``-metrics``
suffix dropped and dashes as underscores (``connector-count`` of ``connect-worker-metrics``
is ``kafka_connect_worker_connector_count``). Rates and averages are left to PromQL
(``rate(..._total[1m])``, a histogram's ``_sum / _count``), as Prometheus prefers; metrics
of connect-grpc's own are under ``connect_grpc_``. docs/metrics.md lists them all.
"""
