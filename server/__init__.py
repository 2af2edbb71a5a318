"""The sowsched gRPC server: servicer, persistence, configuration."""
