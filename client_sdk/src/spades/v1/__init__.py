"""Generated protobuf/gRPC code for the spades.v1 API (run `make protos`; do not edit by hand)."""
