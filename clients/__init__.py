"""Clients of sowsched: the gRPC client library, the CLI, simulation clients, workloads and trace readers."""
