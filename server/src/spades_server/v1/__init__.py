"""Generated code of the server's private protos (spades.server.v1; `make protos`)."""
