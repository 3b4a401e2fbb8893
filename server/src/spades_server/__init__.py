"""Spades table service: gRPC server hosting Spades tables."""
