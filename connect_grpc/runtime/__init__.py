"""The worker runtime: connector instances and task micro-batch loops on one SparkSession.

Import ``Worker`` and ``StatusListener`` from ``connect_grpc.runtime.worker``; this package
stays import-light because Spark executors import its ``produce`` and ``range_reader`` modules.
"""
